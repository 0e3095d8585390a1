/** Types of files.mjs, for TypeScript callers (the tests). */

export function writeProjectFile(root: string, name: string, text: string, mode?: number): void;
