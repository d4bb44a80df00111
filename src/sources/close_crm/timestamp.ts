/**
 * Close CRM's originalTimestamp as RudderStack writes it: `date_updated` read by moment.utc and
 * written with the moment format `yyyy-MM-ddTHH:mm:ss.SSSZ`. In moment that format is not ISO:
 * `yyyy` is the era year and `dd` the weekday's two-letter name, so 2019-01-15T12:48:23.395 (a
 * Tuesday) becomes `2019-01-TuT12:48:23.395+00:00`. Sluice writes the same text so events match.
 *
 * Reading follows moment.utc: a missing value is now, a number is epoch milliseconds, a string
 * is ISO 8601 as moment's ISO parser reads it (calendar, ordinal and week dates, optional time
 * and offset, out-of-range parts invalid); other strings go to the JavaScript Date parser as
 * moment's fallback does. Anything invalid is written `Invalid date`.
 */

const WEEKDAYS_MIN = ["Su", "Mo", "Tu", "We", "Th", "Fr", "Sa"];
const INVALID = "Invalid date";
const DAY_MS = 86_400_000;

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** Epoch ms of a UTC calendar day; years 0–99 stay as they are (Date.UTC would add 1900). */
function utcDay(year: number, monthIndex: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, monthIndex, day);
  return d.getTime();
}

const daysInMonth = (year: number, monthIndex: number) => new Date(utcDay(year, monthIndex + 1, 0)).getUTCDate();
const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** Monday of ISO week 1 of `year` (the week holding 4 January). */
function isoWeekOneMonday(year: number): number {
  const jan4 = utcDay(year, 0, 4);
  return jan4 - ((new Date(jan4).getUTCDay() + 6) % 7) * DAY_MS;
}
const isoWeeksInYear = (year: number) => Math.round((isoWeekOneMonday(year + 1) - isoWeekOneMonday(year)) / (7 * DAY_MS));

const EXTENDED = /^\s*((?:[+-]\d{6}|\d{4})-(?:\d\d-\d\d|W\d\d-\d|W\d\d|\d\d\d|\d\d))(?:(T| )(\d\d(?::\d\d(?::\d\d(?:[.,]\d+)?)?)?)([+-]\d\d(?::?\d\d)?|\s*Z)?)?$/;
const BASIC = /^\s*((?:[+-]\d{6}|\d{4})(?:\d\d\d\d|W\d\d\d|W\d\d|\d\d\d|\d\d|))(?:(T| )(\d\d(?:\d\d(?:\d\d(?:[.,]\d+)?)?)?)([+-]\d\d(?::?\d\d)?|\s*Z)?)?$/;

/** The day an ISO date part names, as epoch ms, or NaN when a part is out of range. */
function isoDay(date: string): number {
  let m: RegExpMatchArray | null;
  if ((m = date.match(/^([+-]\d{6}|\d{4})-?(\d\d)-?(\d\d)$/)) || (m = date.match(/^(\d{4})-(\d\d)$/)) || (m = date.match(/^(\d{4})(\d\d)$/)) || (m = date.match(/^(\d{4})$/))) {
    const year = Number(m[1]);
    const month = m[2] === undefined ? 1 : Number(m[2]);
    const day = m[3] === undefined ? 1 : Number(m[3]);
    if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month - 1)) return NaN;
    return utcDay(year, month - 1, day);
  }
  if ((m = date.match(/^(\d{4})-?(\d{3})$/))) {
    const year = Number(m[1]);
    const dayOfYear = Number(m[2]);
    if (dayOfYear < 1 || dayOfYear > (isLeap(year) ? 366 : 365)) return NaN;
    return utcDay(year, 0, dayOfYear);
  }
  if ((m = date.match(/^(\d{4})-?W(\d\d)(?:-?(\d))?$/))) {
    const year = Number(m[1]);
    const week = Number(m[2]);
    const weekday = m[3] === undefined ? 1 : Number(m[3]);
    if (week < 1 || week > isoWeeksInYear(year) || weekday < 1 || weekday > 7) return NaN;
    return isoWeekOneMonday(year) + ((week - 1) * 7 + weekday - 1) * DAY_MS;
  }
  // Signed six-digit years in other layouts: moment reads them loosely; not worth copying.
  return NaN;
}

/** Epoch ms of an ISO 8601 string as moment reads it; undefined when it is not ISO at all. */
function parseIso(text: string): number | undefined {
  const m = EXTENDED.exec(text) ?? BASIC.exec(text);
  if (!m) return undefined;
  const day = isoDay(m[1]!);
  const time = m[3] ?? "";
  const t = /^(\d\d):?(\d\d)?:?(\d\d)?(?:[.,](\d+))?$/.exec(time);
  const hour = Number(t?.[1] ?? 0);
  const minute = Number(t?.[2] ?? 0);
  const second = Number(t?.[3] ?? 0);
  // moment keeps milliseconds, truncating further digits.
  const ms = t?.[4] === undefined ? 0 : Math.floor(Number(`0.${t[4]}`) * 1000);
  if (Number.isNaN(day) || minute > 59 || second > 59 || hour > 24 || (hour === 24 && (minute || second || ms))) return NaN;
  let offsetMinutes = 0;
  const zone = m[4]?.trim();
  if (zone && zone !== "Z") {
    const z = /^([+-])(\d\d):?(\d\d)?$/.exec(zone)!;
    offsetMinutes = (z[1] === "-" ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3] ?? 0));
  }
  return day + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + ms;
}

/** moment.utc(value), as epoch ms (NaN when invalid). */
function momentUtc(value: unknown, now: number): number {
  if (value === undefined) return now;
  if (typeof value === "number") return new Date(value).getTime();
  if (typeof value !== "string") return NaN;
  const iso = parseIso(value);
  if (iso !== undefined) return iso;
  // moment's own fallback: the Date parser, in UTC unless the text names a zone.
  const fallback = new Date(`${value} UTC`).getTime();
  return Number.isNaN(fallback) ? new Date(value).getTime() : fallback;
}

/** The era year moment writes for `yyyy`: the year AD, or for years BC counted back from 1. */
const eraYear = (year: number) => (year >= 1 ? year : 1 - year);

/** `date_updated` in RudderStack's Close CRM format (see the top of this file). */
export function closeTimestamp(value: unknown, now: number): string {
  const ms = momentUtc(value, now);
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return INVALID;
  const d = new Date(ms);
  return (
    `${pad(eraYear(d.getUTCFullYear()), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${WEEKDAYS_MIN[d.getUTCDay()]}` +
    `T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}+00:00`
  );
}
