/**
 * /regulations: the Data Regulation API as a page. Create suppress / suppress_with_delete for
 * a list of users, page through the records with the API's cursor (`?after=<cursor>` in the
 * URL, so a reload opens the same page), cancel one, and follow each destination's deletion
 * job until it is final (the page polls while one is still under way).
 */
import { useLocation } from "preact-iso";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { DeletionStatus, Regulation, RegulationPage, RegulationType } from "../../../regulations/schemas";
import { api, errorMessage } from "../api";
import { Badge, ConfirmButton, Notice, type Tone } from "../components";
import { useAction, useResource, useSourcesAndDestinations } from "../hooks";
import { ErrorNote, PageHeader, formatTime } from "../layout";
import type { Destination, Source } from "../types";
import { parseUsers } from "./regulations/parse-users";
import "./regulations/regulations.css";


interface Definition {
  name: string;
  displayName: string;
  capabilities?: { userDeletion?: boolean };
}

const TYPE_LABEL: Record<RegulationType, string> = { suppress: "Suppress", suppress_with_delete: "Suppress and delete" };

const STATUS_LABEL: Record<DeletionStatus, string> = {
  pending: "Pending",
  running: "Running",
  complete: "Complete",
  failed: "Failed, will retry",
  aborted: "Aborted",
};

const STATUS_TONE: Record<DeletionStatus, Tone> = { pending: "info", running: "info", complete: "ok", failed: "warn", aborted: "bad" };

/** While a job is in one of these, its status may still change: the page keeps asking. */
const UNDER_WAY = new Set<DeletionStatus>(["pending", "running", "failed"]);
const POLL_MS = 2000;

/** The cursor inside `paging.next` (`/v2/regulations?after_cursor=C`). */
function cursorOf(next: string): string | undefined {
  try {
    return new URL(next, location.origin).searchParams.get("after_cursor") ?? undefined;
  } catch {
    return undefined;
  }
}

export default function RegulationsPage() {
  const { query, path, route } = useLocation();
  const after = query.after || undefined;

  const [page, setPage] = useState<RegulationPage | undefined>();
  const [listError, setListError] = useState("");
  const { sources, destinations, error: namesError } = useSourcesAndDestinations();
  const { data: deletable, error: definitionsError } = useResource(() =>
    api<Definition[]>("GET", "/destination-definitions").then((defs) => new Map(defs.map((x) => [x.name, x.capabilities?.userDeletion === true]))),
  );
  const [notice, setNotice] = useState("");
  const { error: cancelError, setError: setCancelError, run } = useAction();
  const actionError = cancelError || namesError || definitionsError;
  // Cursors of the pages before this one, for "Previous page" (a pasted link starts without them).
  const [previous, setPrevious] = useState<Array<string | undefined>>([]);
  const loadSeq = useRef(0);

  const load = async (quiet = false) => {
    const seq = ++loadSeq.current;
    if (!quiet) setListError("");
    try {
      const res = await api<RegulationPage>("GET", `/v2/regulations${after ? `?after_cursor=${encodeURIComponent(after)}` : ""}`);
      // An answer for a page the user has already left is dropped.
      if (seq === loadSeq.current) setPage(res);
    } catch (e) {
      if (seq === loadSeq.current) setListError(errorMessage(e));
    }
  };

  useEffect(() => {
    setPage(undefined);
    load();
  }, [after]);

  // Deletion jobs move on their own: ask again while one on this page is not final.
  const underWay = !!page?.data.some((r) => !r.canceled && r.deletion?.some((d) => UNDER_WAY.has(d.status)));
  useEffect(() => {
    if (!underWay) return;
    const timer = setTimeout(() => load(true), POLL_MS);
    return () => clearTimeout(timer);
  }, [page, underWay]);

  const names = useMemo(() => {
    const m = new Map<string, string>();
    for (const x of sources ?? []) m.set(x.id, x.name);
    for (const x of destinations ?? []) m.set(x.id, x.name);
    return m;
  }, [sources, destinations]);

  const goTo = (cursor: string | undefined) => route(cursor ? `${path}?after=${encodeURIComponent(cursor)}` : path);
  const next = page?.paging.next ? cursorOf(page.paging.next) : undefined;

  const cancel = (r: Regulation) => {
    setNotice("");
    run(async () => {
      await api("DELETE", `/v2/regulations/${encodeURIComponent(r.id)}`);
      setNotice(`Canceled the regulation for user "${r.attributes.userId}".`);
      await load(true);
    });
  };

  const created = async (count: number) => {
    setCancelError("");
    setNotice(`Created ${count === 1 ? "a regulation" : `${count} regulations`}. They apply now; the list is oldest first, so new ones are at its end.`);
    await load(true);
  };

  return (
    <>
      <PageHeader title="Regulations" />
      <p class="muted">
        Suppress a user's events at intake, or also delete their data at destinations (for privacy requests). One record per user; cancelling lifts the
        suppression at once.
      </p>
      <CreateForm sources={sources ?? []} destinations={destinations} deletable={deletable ?? new Map()} onCreated={created} />
      <Notice text={notice} />
      <ErrorNote error={actionError} />
      <ErrorNote error={listError} />
      {page === undefined ? (
        !listError && <p class="muted">Loading…</p>
      ) : page.data.length === 0 ? (
        <p class="empty">{after ? "No regulations on this page. Go back to the first page." : "No regulations yet. Create one above to suppress a user's events or delete their data."}</p>
      ) : (
        <div class="reg-table-wrap">
          <table class="table reg-table">
            <thead>
              <tr>
                <th>User</th>
                <th>Type</th>
                <th>Applies to</th>
                <th>Created</th>
                <th>State</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {page.data.map((r) => (
                <RegulationRow key={r.id} r={r} names={names} onCancel={() => cancel(r)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(after || next) && (
        <nav class="reg-paging" aria-label="Pages">
          {after && (
            <button
              type="button"
              onClick={() => {
                setPrevious([]);
                goTo(undefined);
              }}
            >
              First page
            </button>
          )}
          {previous.length > 0 && (
            <button
              type="button"
              onClick={() => {
                const prev = previous[previous.length - 1];
                setPrevious(previous.slice(0, -1));
                goTo(prev);
              }}
            >
              Previous page
            </button>
          )}
          {next && (
            <button
              type="button"
              onClick={() => {
                setPrevious([...previous, after]);
                goTo(next);
              }}
            >
              Next page
            </button>
          )}
        </nav>
      )}
    </>
  );
}

function RegulationRow({ r, names, onCancel }: { r: Regulation; names: Map<string, string>; onCancel: () => void }) {
  const { userId, ...identifiers } = r.attributes;
  const others = Object.entries(identifiers);
  return (
    <tr data-regulation={r.id} class={r.canceled ? "reg-canceled" : undefined}>
      <td class="reg-wrap" data-label="User">
        <code class="reg-user">{userId}</code>
        {others.length > 0 && (
          <ul class="reg-identifiers">
            {others.map(([k, v]) => (
              <li key={k}>
                <span class="muted">{k}:</span> {v}
              </li>
            ))}
          </ul>
        )}
      </td>
      <td data-label="Type">{TYPE_LABEL[r.regulationType] ?? r.regulationType}</td>
      <td class="reg-wrap" data-label="Applies to">
        {r.regulationType === "suppress" ? (
          r.sourceIds ? (
            <>Sources: {r.sourceIds.map((id) => names.get(id) ?? id).join(", ")}</>
          ) : (
            "Every source"
          )
        ) : (
          <>
            <span class="muted">Every source; deleted at:</span>
            <ul class="reg-deletions" aria-label="Deletion per destination">
              {(r.deletion ?? []).map((d) => (
                <li key={d.destinationId} data-destination={d.destinationId}>
                  <span class="reg-dest">{names.get(d.destinationId) ?? d.destinationId}</span>{" "}
                  <Badge tone={STATUS_TONE[d.status] ?? "muted"}>{STATUS_LABEL[d.status] ?? d.status}</Badge>
                  {d.reason && <span class="reg-reason">{d.reason}</span>}
                  <span class="muted reg-updated">{formatTime(d.updatedAt)}</span>
                </li>
              ))}
            </ul>
          </>
        )}
      </td>
      <td data-label="Created">{formatTime(r.createdAt)}</td>
      <td class="reg-state" data-label="State">{r.canceled ? <span class="muted">Canceled</span> : <span class="reg-active">Active</span>}</td>
      <td class="row-actions">
        {!r.canceled && (
          <ConfirmButton
            class="danger"
            label={`Cancel the regulation for ${userId}`}
            question={() => `Cancel the regulation for user "${userId}"? Suppression lifts at once; deletions not yet run are aborted.`}
            onConfirm={onCancel}
          >
            Cancel
          </ConfirmButton>
        )}
      </td>
    </tr>
  );
}

function CreateForm({
  sources,
  destinations,
  deletable,
  onCreated,
}: {
  sources: Source[];
  destinations: Destination[] | undefined;
  deletable: Map<string, boolean>;
  onCreated: (count: number) => void;
}) {
  const [type, setType] = useState<RegulationType>("suppress");
  const [usersText, setUsersText] = useState("");
  const [sourceIds, setSourceIds] = useState<string[]>([]);
  const [destinationIds, setDestinationIds] = useState<string[]>([]);
  const { busy, error, setError, run } = useAction();

  const toggle = (list: string[], id: string, on: boolean) => (on ? [...list, id] : list.filter((x) => x !== id));

  const submit = async (e: Event) => {
    e.preventDefault();
    setError("");
    const parsed = parseUsers(usersText);
    if (parsed.error !== undefined) return setError(parsed.error);
    if (type === "suppress_with_delete" && destinationIds.length === 0) return setError("Destinations: choose at least one destination whose data is deleted");
    const body: Record<string, unknown> = { regulationType: type, users: parsed.users };
    if (type === "suppress" && sourceIds.length > 0) body.sourceIds = sourceIds;
    if (type === "suppress_with_delete") body.destinationIds = destinationIds;
    await run(async () => {
      await api("POST", "/v2/regulations", body);
      setUsersText("");
      setSourceIds([]);
      setDestinationIds([]);
      onCreated(parsed.users.length);
    });
  };

  return (
    <form class="card reg-form" onSubmit={submit} aria-label="New regulation">
      <h2>New regulation</h2>
      <fieldset class="reg-choice">
        <legend>Type</legend>
        <label class="reg-check">
          <input type="radio" name="reg-type" checked={type === "suppress"} onChange={() => setType("suppress")} />
          <span>
            Suppress <span class="muted">— accept but drop the users' new events</span>
          </span>
        </label>
        <label class="reg-check">
          <input type="radio" name="reg-type" checked={type === "suppress_with_delete"} onChange={() => setType("suppress_with_delete")} />
          <span>
            Suppress and delete <span class="muted">— also remove their queued and stored events and ask destinations to delete them</span>
          </span>
        </label>
      </fieldset>

      <label for="reg-users">Users</label>
      <textarea
        id="reg-users"
        class="reg-users"
        rows={4}
        spellcheck={false}
        placeholder={"user-123\nuser-456 email=jane@example.com phone=+15550100"}
        value={usersText}
        onInput={(e) => setUsersText(e.currentTarget.value)}
      />
      <p class="muted reg-hint">One user per line: the userId, then optional identifiers as kind=value (email, phone, or your own kind); put a value with spaces in double quotes, e.g. name="Jane Doe". Events are matched by userId.</p>

      {type === "suppress" ? (
        <fieldset class="reg-choice">
          <legend>Sources</legend>
          {sources.length === 0 ? (
            <p class="muted reg-hint">Every source (there are none yet).</p>
          ) : (
            <>
              <p class="muted reg-hint">None chosen: every source, including ones added later.</p>
              {sources.map((s) => (
                <label class="reg-check" key={s.id}>
                  <input type="checkbox" checked={sourceIds.includes(s.id)} onChange={(e) => setSourceIds(toggle(sourceIds, s.id, e.currentTarget.checked))} />
                  <span>{s.name}</span>
                </label>
              ))}
            </>
          )}
        </fieldset>
      ) : (
        <fieldset class="reg-choice">
          <legend>Destinations</legend>
          {destinations === undefined ? (
            <p class="muted reg-hint">Loading…</p>
          ) : destinations.length === 0 ? (
            <p class="muted reg-hint">
              There are no destinations to delete data at. <a href="/destinations">Add one</a>, or choose Suppress.
            </p>
          ) : (
            destinations.map((d) => (
              <label class="reg-check" key={d.id}>
                <input type="checkbox" checked={destinationIds.includes(d.id)} onChange={(e) => setDestinationIds(toggle(destinationIds, d.id, e.currentTarget.checked))} />
                <span>
                  {d.name} <span class="muted">({d.type}{deletable.get(d.type ?? "") === false ? ": cannot delete users, its deletion will be aborted" : ""})</span>
                </span>
              </label>
            ))
          )}
        </fieldset>
      )}
      <div class="reg-actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Creating…" : "Create regulation"}
        </button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}
