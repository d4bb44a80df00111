/**
 * The draft JSON Schema of an event model (src/catalog/draft.ts): the paths observed become a
 * draft-07 schema of the whole event, with their types, required where present in at least 99%
 * of the sampled events that had their parent, objects closed unless paths overflowed, and the
 * event and its context left open. Checked with Ajv, which tracking plans validate with: the
 * events the model was drafted from pass, an unplanned property does not.
 */
import { describe, expect, test } from "bun:test";
import Ajv from "ajv";
import { draftJsonSchema } from "../../src/catalog/draft";
import { mergeFlush } from "../../src/catalog/merge";
import { CatalogObserver } from "../../src/catalog/observer";
import type { CatalogModelRow, PathStats } from "../../src/catalog/store";

const T = 1_796_644_800_000;
const stats = (types: PathStats["types"], present: number): PathStats => ({ types, present, firstSeen: T, lastSeen: T });

function model(paths: Record<string, PathStats>, sampled: number, overflowPaths = 0): CatalogModelRow {
  return { workspaceId: "ws", sourceId: "src", type: "track", event: "Order Completed", firstSeen: T, lastSeen: T, count: sampled, daily: {}, sampled, paths, overflowPaths };
}

describe("draftJsonSchema", () => {
  test("types, required at 99% of the parent's events, closed objects, array items", () => {
    const schema = draftJsonSchema(
      model(
        {
          userId: stats({ string: 100 }, 100),
          properties: stats({ object: 100 }, 100),
          "properties.total": stats({ integer: 60, number: 40 }, 100),
          "properties.coupon": stats({ string: 30, null: 70 }, 98),
          "properties.address": stats({ object: 50 }, 50),
          "properties.address.city": stats({ string: 50 }, 50),
          "properties.address.zip": stats({ string: 10 }, 10),
          "properties.products": stats({ array: 100 }, 100),
          "properties.products[]": stats({ object: 90 }, 90),
          "properties.products[].sku": stats({ string: 90 }, 90),
          "properties.products[].tags": stats({ array: 5 }, 5),
          "properties.products[].tags[]": stats({ string: 5 }, 5),
          "context.traits": stats({ object: 100 }, 100),
          "context.traits.plan": stats({ string: 100 }, 100),
        },
        100,
      ),
    );
    expect(schema).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      description: 'Drafted from 100 sampled track events named "Order Completed".',
      type: "object",
      properties: {
        context: {
          type: "object",
          properties: { traits: { type: "object", properties: { plan: { type: "string" } }, required: ["plan"], additionalProperties: false } },
          required: ["traits"],
        },
        properties: {
          type: "object",
          properties: {
            address: { type: "object", properties: { city: { type: "string" }, zip: { type: "string" } }, required: ["city"], additionalProperties: false },
            coupon: { type: ["string", "null"] },
            products: {
              type: "array",
              items: { type: "object", properties: { sku: { type: "string" }, tags: { type: "array", items: { type: "string" } } }, required: ["sku"], additionalProperties: false },
            },
            total: { type: "number" },
          },
          required: ["products", "total"],
          additionalProperties: false,
        },
        userId: { type: "string" },
      },
      required: ["context", "properties", "userId"],
    });
  });

  test("with paths beyond the bound nothing is closed; without samples the event is only an object", () => {
    const open = draftJsonSchema(model({ properties: stats({ object: 3 }, 3), "properties.a": stats({ integer: 3 }, 3) }, 3, 7));
    expect(open.properties).toEqual({ properties: { type: "object", properties: { a: { type: "integer" } }, required: ["a"] } });
    expect(draftJsonSchema(model({}, 0))).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      description: 'Drafted from 0 sampled track events named "Order Completed".',
      type: "object",
      properties: {},
    });
  });

  test("the events observed validate against their draft in Ajv; an unplanned property does not", () => {
    const events = [
      { type: "track", event: "Order Completed", userId: "u1", properties: { total: 10, currency: "EUR", items: [{ sku: "a", qty: 1 }] }, context: { library: { name: "js" } } },
      { type: "track", event: "Order Completed", userId: "u2", properties: { total: 12.5, currency: "USD", items: [] }, context: { library: { name: "js" } } },
      { type: "track", event: "Order Completed", anonymousId: "a3", properties: { total: 1, currency: "EUR", items: [{ sku: "b", qty: 2, gift: true }] }, context: {} },
    ];
    const o = new CatalogObserver({ maxModels: 10, maxPaths: 100, samplePerSecond: 100, policy: () => ({ examples: true, personal: false, strictNames: true }), clock: () => 0 });
    events.forEach((e, i) => o.observe({ id: i + 1, partition: 0, sourceId: "src", workspaceId: "ws", type: "track", receivedAt: T, payload: JSON.stringify(e) }));
    const d = o.deltas()[0]!;
    const [row] = mergeFlush([{ sourceId: "src", workspaceId: "ws", modelCount: 0, models: new Map() }], new Map([["src", d]]), {
      maxModels: 10,
      maxPaths: 100,
      now: T,
      policy: () => ({ examples: true, personal: false, strictNames: true }),
      wasRefused: () => false,
      pathKeys: new Map([["src", new Set(d.models.keys())]]),
    }).models;
    const validate = new Ajv({ strict: false }).compile(draftJsonSchema(row!));
    for (const e of events) expect(validate(e)).toBe(true);
    expect(validate({ ...events[0], properties: { ...events[0]!.properties, discount: 5 } })).toBe(false);
    expect(validate({ ...events[0], properties: { currency: "EUR", items: [] } })).toBe(false); // total is required
    expect(validate({ ...events[1], userId: undefined, anonymousId: "x" })).toBe(true); // userId in 2 of 3: optional
  });
});
