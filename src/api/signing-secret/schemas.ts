import { z } from "zod";
import { timestamp } from "../../uploads/schemas/resources";

/** The account's signing secret for transform URLs (extension), as its two operations answer it. */
export const signingSecretResponseSchema = z
  .object({
    type: z.literal("success"),
    msg: z.literal("success"),
    data: z.object({
      secret: z.string().meta({
        description:
          "The key (`sk_` and 40 letters and digits) that signs image transform URLs: `s`, the unpadded base64url " +
          'HMAC-SHA256 of the URL\'s path and query up to `&s=` (docs/api.md, "Signed transform URLs").',
      }),
      created_at: timestamp.meta({ description: "When this secret was made (its first read, or its rotation)." }),
    }),
  })
  .meta({ id: "SigningSecretResponse" });
