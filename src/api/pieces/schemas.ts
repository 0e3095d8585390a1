import { z } from "zod";
import { PIECE_BYTES } from "../../model/spec-limits";
import { MAX_PIECES, SESSION_ID_PATTERN } from "../../uploads/intake/piece-sessions";
import { wholeNumber } from "../../uploads/schemas/fields";

/** Text fields of POST /api/chunk (the piece itself is the `chunk` part). */
export const chunkFields = z.object({
  upload_id: z
    .string()
    .regex(SESSION_ID_PATTERN, { message: "must be 32 hexadecimal characters" })
    .meta({ description: "Chosen by the client: 32 random hexadecimal characters, the same for every piece." }),
  index: wholeNumber(0, MAX_PIECES - 1).meta({ description: "Position of the piece, from 0." }),
  total: wholeNumber(1, MAX_PIECES).meta({
    description: `Number of pieces, at most ${MAX_PIECES}; the same for every piece.`,
  }),
});

/** POST /api/chunk: the piece is stored; the size tells the client how to cut the next ones. */
export const chunkResponseSchema = z
  .object({ type: z.literal("success"), chunk_size: z.literal(PIECE_BYTES) })
  .meta({ id: "ChunkResponse" });
