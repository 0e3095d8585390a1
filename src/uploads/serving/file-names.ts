import { objectName } from "../../storage/keys";

/** Whether `name`, from a `path` or `thumb` URL, is the current name of the stored object at `key`. */
export const isNamed = (key: string | null, name: string) => key !== null && objectName(key) === name;

/** The name `src` is downloaded as: the upload's id and its current file's extension. */
export const srcFilename = (facts: { id: string; objectKey: string }) =>
  `${facts.id}.${objectName(facts.objectKey).split(".").pop()}`;
