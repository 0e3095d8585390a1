/**
 * An upload as the domain hands it out: its row, as the database keeps it. Routes name it by this
 * type and never by the storage module's.
 */
export type { UploadRow as Upload } from "../model/schema";
