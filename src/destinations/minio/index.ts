/**
 * MINIO: raw events as gzipped JSON-lines files in a MinIO bucket, in rudder-server's layout
 * (src/object-storage/). Config keys are RudderStack's MINIO definition's.
 */
import { type Static, t } from "elysia";
import { objectStorageDefinition } from "../object-storage-definition";

export const MinioConfig = t.Object(
  {
    /** host:port of the MinIO server. */
    endPoint: t.String({ minLength: 1 }),
    accessKeyID: t.Optional(t.String()),
    secretAccessKey: t.Optional(t.String()),
    bucketName: t.String({ minLength: 1, maxLength: 100 }),
    prefix: t.Optional(t.String({ maxLength: 100 })),
    useSSL: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);
export type MinioConfig = Static<typeof MinioConfig>;

export const minio = objectStorageDefinition("MINIO", "MinIO", MinioConfig, ["endPoint"]);
