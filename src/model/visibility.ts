/**
 * Where an upload shows: unlisted (file and page for whoever has the link), private (the file
 * only; the page sends everyone but the owner to it) or public (listed and indexable).
 */
export const VISIBILITIES = ["unlisted", "private", "public"] as const;
export type Visibility = (typeof VISIBILITIES)[number];
