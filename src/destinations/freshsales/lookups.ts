/**
 * The calls FRESHSALES makes to Freshsales before it answers, as RudderStack's transformer makes
 * them: a sales-activity type or lifecycle stage named by the event is read from Freshsales'
 * selector lists for its id, a contact is upserted by e-mail for its id (and its accounts), and
 * a group's account is upserted for its id. Failures abort in RudderStack's words (its text
 * ends in the `errors.message` of Freshsales' answer, empty when there is none).
 */
import { type LookupAnswer, type LookupClient, TransformError } from "../types";

type Obj = Record<string, any>;

export interface Api {
  /** `https://<domain>/crm/sales/api`, no trailing slash (or the override). */
  base: string;
  headers: Record<string, string>;
  lookup: LookupClient;
}

const bodyOf = (a: LookupAnswer): Obj => (a.body && typeof a.body === "object" ? a.body : {});

/** Fails the event unless Freshsales answered one of `accepted`, naming what failed as RudderStack does. */
function expect(a: LookupAnswer, accepted: number[], what: string): Obj {
  if (!accepted.includes(a.status)) throw new TransformError(`${what} ${bodyOf(a).errors?.message || ""}`);
  return bodyOf(a);
}

/** The contact of this e-mail, upserted (Freshsales creates it when missing) so that its id and accounts are known. */
async function upsertContact(api: Api, email: unknown, params?: Record<string, unknown>): Promise<LookupAnswer> {
  return api.lookup({
    method: "POST",
    endpoint: `${api.base}/contacts/upsert`,
    headers: api.headers,
    params,
    json: { unique_identifier: { emails: email }, contact: { emails: email } },
  });
}

/** The contact's id, for a sales activity that names its contact by e-mail only. */
export async function contactId(api: Api, email: unknown): Promise<unknown> {
  const body = expect(await upsertContact(api, email), [200, 201], "failed to fetch Contact details");
  const id = body.contact?.id;
  if (!id) throw new TransformError("Failed in fetching userId. Aborting!");
  return id;
}

/** The id of the sales activity type of this name. */
export async function salesActivityTypeId(api: Api, name: unknown): Promise<unknown> {
  const res = await api.lookup({ method: "GET", endpoint: `${api.base}/selector/sales_activity_types`, headers: api.headers });
  const list = expect(res, [200], "failed to fetch sales activities details").sales_activity_types;
  if (!Array.isArray(list)) throw new TransformError("Unable to fetch correct list of sales activity.");
  const found = list.find((t: Obj) => t?.name === name);
  if (!found) throw new TransformError(`sales Activity ${name} doesn't exists. Aborting!`);
  return found.id;
}

/** The id of the lifecycle stage of this name. */
export async function lifecycleStageId(api: Api, name: unknown): Promise<unknown> {
  const res = await api.lookup({ method: "GET", endpoint: `${api.base}/selector/lifecycle_stages`, headers: api.headers });
  const list = expect(res, [200], "failed to fetch lifecycle_stages details").lifecycle_stages;
  if (!Array.isArray(list)) throw new TransformError("Unable to fetch correct list of lifecycle stages");
  const found = list.find((s: Obj) => s?.name === name);
  if (!found) throw new TransformError(`failed to fetch lifeCycleStages with ${name}`);
  return found.id;
}

/**
 * The contact's sales accounts with this account added: the contact's own list (as Freshsales
 * answers it) and the account, upserted for its id, which becomes the primary one when the
 * contact had none.
 */
export async function accountsWith(api: Api, email: unknown, account: Obj): Promise<Obj[]> {
  const contact = expect(await upsertContact(api, email, { include: "sales_accounts" }), [200, 201], "failed to fetch user accountDetails");
  const accounts = contact.contact?.sales_accounts;
  if (!accounts) throw new TransformError("Fails in fetching user accountDetails");
  const res = await api.lookup({
    method: "POST",
    endpoint: `${api.base}/sales_accounts/upsert`,
    headers: api.headers,
    json: { unique_identifier: { name: account.name }, sales_account: account },
  });
  const id = expect(res, [200, 201], "failed to create/update group").sales_account?.id;
  if (!id) throw new TransformError("Fails in fetching accountId.");
  return accounts.length > 0 ? [...accounts, { id, is_primary: false }] : [{ id, is_primary: true }];
}
