import { z } from "zod";
import { KEY_KINDS } from "../../model/key-kinds";

/** POST /api/keys/rotate: which of the account's two keys to replace. */
export const keyRotateBody = z.object({
  kind: z.enum(KEY_KINDS, { message: 'must be "full" or "upload"' }),
});

export const keyRotateResponseSchema = z
  .object({
    type: z.literal("success"),
    msg: z.literal("success"),
    data: z.object({
      kind: z.enum(KEY_KINDS),
      key: z.string().meta({
        description:
          "The new key (`fk_` or `uk_` and its letters and digits), shown only in this answer: the service keeps " +
          "its hash alone. The key it replaces stopped working with this answer.",
      }),
    }),
  })
  .meta({ id: "KeyRotateResponse" });
