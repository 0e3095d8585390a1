import type { KeyKind } from "../../model/key-kinds";
import type { UploadFields } from "../upload";

/** The options a tus upload was created with, checked then, for the pipeline at its end. */
export interface StoredOptions {
  fields: UploadFields;
  passwordHash: string | null;
  /**
   * The kind of key that created it: the album rules at its end are that key's, whichever key
   * sends the last bytes (for an upload created before this was kept, the sender's, as before).
   */
  creatorKind?: KeyKind;
}
