/**
 * DIGITAL_OCEAN_SPACES: raw events as gzipped JSON-lines files in a DigitalOcean Spaces bucket,
 * in rudder-server's layout (src/object-storage/). Config keys are RudderStack's definition's.
 */
import { type Static, t } from "elysia";
import { objectStorageDefinition } from "../object-storage-definition";

export const DigitalOceanSpacesConfig = t.Object(
  {
    /** The region's endpoint, e.g. nyc3.digitaloceanspaces.com; its first label is the region. */
    endPoint: t.String({ minLength: 1 }),
    accessKeyID: t.Optional(t.String()),
    accessKey: t.Optional(t.String()),
    bucketName: t.String({ minLength: 1, maxLength: 100 }),
    prefix: t.Optional(t.String({ maxLength: 100 })),
  },
  { additionalProperties: true },
);
export type DigitalOceanSpacesConfig = Static<typeof DigitalOceanSpacesConfig>;

export const digitalOceanSpaces = objectStorageDefinition("DIGITAL_OCEAN_SPACES", "DigitalOcean Spaces", DigitalOceanSpacesConfig, ["endPoint"]);
