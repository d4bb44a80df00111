/** A version id short enough for a table cell; the full id goes in its title. */
export const shortId = (id: string) => (id.length > 14 ? `${id.slice(0, 4)}…${id.slice(-8)}` : id);
