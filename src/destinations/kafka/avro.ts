/**
 * KAFKA's `convertToAvro`: a record's value as Avro binary instead of JSON, by the schema its
 * event names (`integrations.Kafka.schemaId`) among the destination's `avroSchemas`, as
 * rudder-server's producer serializes it: the event's JSON read as Avro's JSON encoding (a
 * union's value as `{"type": value}`), written as binary, and with `embedAvroSchemaID` preceded by
 * the Confluent wire header (a zero byte, the schema id as a 4-byte big-endian integer).
 *
 * avsc does the encoding: Avro's binary format (zig-zag varints, unions, logical types, defaults)
 * is a specification to get exactly right, which a well-kept library already does.
 */
import { Type } from "avsc";
import { LRUCache } from "lru-cache";

/** Parsed schemas by their text: a destination's schemas are parsed once, not per record. */
const types = new LRUCache<string, Type>({ max: 256 });

/** The schema's Avro type, or why its text is none. */
export function avroType(schema: string): Type | { problem: string } {
  const kept = types.get(schema);
  if (kept) return kept;
  try {
    const type = Type.forSchema(JSON.parse(schema));
    types.set(schema, type);
    return type;
  } catch (e) {
    return { problem: (e as Error).message };
  }
}

export interface AvroSchemaEntry {
  schemaId?: string;
  schema?: string;
}

/** The record value for `message` under the schema `schemaId` names, or why it cannot be made (the event aborts). */
export function avroValue(message: unknown, schemaId: unknown, schemas: AvroSchemaEntry[], embedSchemaId: boolean): Buffer | { error: string } {
  const messageId = (message as { messageId?: unknown })?.messageId;
  if (schemaId === undefined || schemaId === null || String(schemaId) === "") return { error: `schemaId is not available for event with messageId: ${String(messageId ?? "")}` };
  const id = String(schemaId);
  const entry = schemas.find((s) => s?.schemaId === id);
  if (!entry?.schema) return { error: `unable to find schema with ID ${id}` };
  const type = avroType(entry.schema);
  if ("problem" in type) return { error: `the schema with ID ${id} is not an Avro schema: ${type.problem}` };
  let bin: Buffer;
  try {
    bin = type.toBuffer(type.fromString(JSON.stringify(message)));
  } catch (e) {
    return { error: `unable to serialize event with schemaId "${id}" and messageId ${String(messageId ?? "")}: ${(e as Error).message}` };
  }
  if (!embedSchemaId) return bin;
  const n = Number(id);
  if (!/^-?\d+$/.test(id) || !Number.isSafeInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) return { error: `avro header: unable to convert schemaID "${id}" to int` };
  const header = Buffer.alloc(5);
  header.writeUInt32BE(n >>> 0, 1);
  return Buffer.concat([header, bin]);
}
