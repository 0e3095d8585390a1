/** A file's text, imported with Vite's `?raw` (docs that tests check against the code). */
declare module "*.md?raw" {
  const text: string;
  export default text;
}
