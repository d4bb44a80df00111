-- HTTP destinations (POST, PUT, PATCH) saved without isDefaultMapping or a mapping sent the whole event. The
-- transform now follows RudderStack's (no mapping: an empty body), and the API saves
-- isDefaultMapping: true as RudderStack's dashboard does; stored configs get it too, so they
-- keep sending what they sent.
UPDATE `destinations` SET `config` = json_set(`config`, '$.isDefaultMapping', json('true'))
WHERE `type` = 'HTTP' AND json_type(`config`, '$.isDefaultMapping') IS NULL AND json_type(`config`, '$.propertiesMapping') IS NULL
  AND upper(coalesce(json_extract(`config`, '$.method'), 'POST')) NOT IN ('GET', 'DELETE');
