/**
 * The event name of each Ortto activity (`activity.field_id` is `act::<code>`), grouped by the
 * channel it belongs to. The names are the ones RudderStack gives, odd ones included (e.g. the
 * Android push audience pair), so the same activity keeps the same event name after a move.
 */
const BY_CHANNEL: Record<string, ReadonlyArray<readonly [code: string, name: string]>> = {
  email: [
    ["s", "Sent email"], ["c", "Clicked email"], ["o", "Opened email"], ["r", "Received email"], ["b", "Bounced email"],
    ["sk", "Skipped email"], ["rt", "Redacted email"], ["f", "Forwarded email"], ["i", "Invalid email"],
    ["v", "Viewed email online"], ["d", "Deferred email"],
  ],
  incidentsAndServices: [
    ["ss", "Incident Triggered"], ["ds", "Incident Unacknowledged"], ["cs", "Service Created"], ["is", "Service Deleted"],
    ["bs", "Service Updated"], ["des", "Service Updated"], ["rs", "Service Updated"], ["rtss", "Service Updated"],
    ["ras", "Service Updated"], ["cos", "Service Updated"], ["rtns", "Service Updated"],
  ],
  forms: [["sf", "Submitted form"]],
  sms: [
    ["oos-a", "Opted out from SMS audience"], ["ois-a", "Opted in to SMS audience"], ["oos-all", "Opted out from all SMS"],
    ["ros-all", "Opted in to all SMS"], ["ss-ab", "SMS subscription abuse"], ["scr", "SMS consent requested"],
    ["scf", "SMS consent failed"],
  ],
  push: [
    ["sph", "Sent push"], ["dph", "Delivered push"], ["cph", "Clicked push"], ["iph", "Invalid push"],
    ["oiip-all", "Opted in to all iOS push"], ["ooip-all", "Opted out of all iOS push"],
    ["oiip-a", "Opted in to iOS push audience"], ["oips-a", "Opted out of iOS push audience"],
    ["oigp-all", "Opted in to all Android push"], ["oogp-all", "Opted out of all Android push"],
    ["oigp-a", "Opted out of Android push audience"], ["oogs-a", "Opted in to Android push audience"],
    ["oiwp-all", "Opted in to all web push"], ["oowp-all", "Opted out of all web push"],
    ["oiwp-a", "Opted in to web push audience"], ["oows-a", "Opted out of to web push audience"],
    ["iws-ab", "Web push subscription abuse"],
  ],
  sessions: [["ws", "Website session"], ["us", "User session"]],
  audiences: [
    ["enter-audience", "Entered audience"], ["leave-audience", "Left audience"], ["ta", "Tag added"], ["tr", "Tag removed"],
    ["u-a", "Unsubscribe from audience"], ["s-a", "Subscribe to audience"], ["u-all", "Un subscribe from all email"],
    ["s-all", "Resubscribe globally"], ["s-ab", "Subscription abuse"],
  ],
  playbooks: [["ep", "Entered playbook"], ["lp", "Left playbook"], ["spa", "Successful playbook action"], ["fpa", "Failed playbook action"]],
  journeys: [["ej", "Entered journey"], ["lj", "Left journey"], ["sja", "Successful journey action"], ["fja", "Failed journey action"]],
  widgets: [
    ["cw", "Clicked widget"], ["sw", "Shown widget"], ["dw", "Dismissed widget"], ["rw", "Reacted to widget"],
    ["swf", "Submitted widget form"], ["rws", "Responded to widget survey"], ["wwv", "Watched widget video"],
    ["sww", "Spun widget wheel"],
  ],
  conversations: [
    ["cop", "Conversation opened"], ["cro", "Conversation re-opened"], ["cas", "Conversation assigned"],
    ["clc", "Conversation closed"], ["csn", "Conversation snoozed"], ["crt", "Conversation rated"],
    ["cms", "Conversation marked as spam"], ["cvs", "Conversation voice call started"],
    ["cve", "Conversation voice call ended"], ["ctg", "Conversation tagged"], ["cut", "Conversation un-tagged"],
  ],
};

/** `act::<code>` → event name. */
export const ACTIVITY_NAMES: ReadonlyMap<string, string> = new Map(
  Object.values(BY_CHANNEL).flatMap((pairs) => pairs.map(([code, name]) => [`act::${code}`, name] as const)),
);

/** The activity Ortto posts when the webhook is tested from its setup page. */
export const TEST_ACTIVITY = "act::test_webhook";
