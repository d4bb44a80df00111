-- HTTP destinations (POST, PUT, PATCH) saved without isDefaultMapping or a mapping sent the whole event. The
-- transform now follows RudderStack's (no mapping: an empty body), and the API saves
-- isDefaultMapping: true as RudderStack's dashboard does; stored configs get it too, so they
-- keep sending what they sent.
UPDATE "destinations" SET "config" = jsonb_set("config", '{isDefaultMapping}', 'true'::jsonb)
WHERE "type" = 'HTTP' AND NOT ("config" ? 'isDefaultMapping') AND NOT ("config" ? 'propertiesMapping')
  AND upper(coalesce("config"->>'method', 'POST')) NOT IN ('GET', 'DELETE');
