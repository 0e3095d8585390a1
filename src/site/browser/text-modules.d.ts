/**
 * The Worker imports this folder's files as text (the Text rule in wrangler.toml, which the
 * Workers Vitest plugin reads too): what the browser gets, as written.
 */
declare module "*/browser/page.js" {
  const text: string;
  export default text;
}
declare module "*/browser/uploader.js" {
  const text: string;
  export default text;
}
declare module "*/browser/uploader.css" {
  const text: string;
  export default text;
}
