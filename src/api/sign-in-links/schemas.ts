import { z } from "zod";
import { timestamp } from "../../uploads/schemas/resources";

/** A single-use link that registers a passkey (extension): the account's own, or an operator's invite. */
export const signInLinkSchema = z.object({
  url: z.string().meta({
    description:
      "The link to open in a browser (`/app/join/` and its token): it works once, until `expires_at`. Shown " +
      "only in this answer; the service keeps its SHA-256 alone.",
  }),
  expires_at: timestamp.meta({ description: "When the link stops working if unused." }),
});

export const signInLinkResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: signInLinkSchema })
  .meta({ id: "SignInLinkResponse" });
