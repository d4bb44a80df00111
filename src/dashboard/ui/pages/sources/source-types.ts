/** The webhook source types (GET /source-types), loaded once per page load: the list only changes with the server. */
import { api } from "../../api";
import { useResource } from "../../hooks";
import type { Source, SourceType } from "../../types";

let loaded: Promise<SourceType[]> | undefined;

function loadSourceTypes(): Promise<SourceType[]> {
  // A failure is not kept: the next page asks again.
  loaded ??= api<SourceType[]>("GET", "/source-types").catch((e) => {
    loaded = undefined;
    throw e;
  });
  return loaded;
}

export const useSourceTypes = () => useResource(loadSourceTypes);

/** Whether services post to this source's webhook URL (it was made with a `type`). */
export const isWebhookSource = (s: Source) => s.sourceDefinition?.category === "webhook";

/** The webhook type a source was made with, matched as the server matches it (case aside). */
export function typeOf(s: Source, types: SourceType[] | undefined): SourceType | undefined {
  const name = isWebhookSource(s) ? s.sourceDefinition!.name.toLowerCase() : undefined;
  return name === undefined ? undefined : types?.find((t) => t.name.toLowerCase() === name);
}

/** What kind of source it is, in a word or two: the webhook type's display name, or how events reach it. */
export function kindLabel(s: Source, types: SourceType[] | undefined): string {
  if (!s.sourceDefinition) return "Event stream";
  if (isWebhookSource(s)) return typeOf(s, types)?.displayName ?? s.sourceDefinition.name;
  return s.sourceDefinition.name;
}
