/**
 * S3: raw events as gzipped JSON-lines files in the user's Amazon S3 bucket, in rudder-server's
 * layout (src/object-storage/). Config keys are RudderStack's S3 definition's, plus `region`.
 */
import { type Static, t } from "elysia";
import { objectStorageDefinition } from "../object-storage-definition";

export const S3Config = t.Object(
  {
    bucketName: t.String({ minLength: 1, maxLength: 100 }),
    prefix: t.Optional(t.String({ maxLength: 100 })),
    /** Not read: Sluice signs with the keys below or the process's AWS_* environment (docs). */
    iamRoleARN: t.Optional(t.String()),
    roleBasedAuth: t.Optional(t.Boolean()),
    accessKeyID: t.Optional(t.String()),
    accessKey: t.Optional(t.String()),
    /** Not read: S3 encrypts every new object (SSE-S3) whatever the request says. */
    enableSSE: t.Optional(t.Boolean()),
    /** Sluice's own key: the bucket's region; asked of AWS when absent, as rudder-server does. */
    region: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type S3Config = Static<typeof S3Config>;

export const s3 = objectStorageDefinition("S3", "Amazon S3", S3Config);
