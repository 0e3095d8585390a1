// Files the scripts keep in the project: the deploy's configuration, its secrets file and the new
// admin token (scripts/deploy.mjs), and .dev.vars (scripts/dev.mjs).
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import path from "node:path";

/**
 * Makes each folder of `dir` below `root` (mode 700 when new) and refuses one that is a symbolic
 * link: a link planted at .wrangler or .wrangler/deploy would carry a secret out of the project.
 */
function ownFolder(root, dir) {
  let at = root;
  for (const part of path.relative(root, dir).split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    try {
      mkdirSync(at, { mode: 0o700 });
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
    }
    const stat = lstatSync(at);
    if (stat.isSymbolicLink())
      throw new Error(`${path.relative(root, at)} is a symbolic link; not writing through it.`);
    if (!stat.isDirectory()) throw new Error(`${path.relative(root, at)} is not a folder.`);
  }
}

/**
 * Writes `text` to `name` under `root` with `mode`, as a new file: written into a temporary file
 * created here alone (O_CREAT|O_EXCL|O_NOFOLLOW, `mode` from the start), then renamed over `name`.
 * Whatever was at `name` (a symbolic or hard link planted there, an older file others could read)
 * is replaced, never written through, and no reader ever sees half the text or a wider mode.
 */
export function writeProjectFile(root, name, text, mode = 0o644) {
  const file = path.join(root, name);
  ownFolder(root, path.dirname(file));
  const temp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    fchmodSync(fd, mode); // the umask may have taken bits off; never adds any the mode lacks
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
