/** Rate limits no test reaches by accident; tests of the limits themselves set their own. */
export const GENEROUS_LIMITS = {
  RATE_LIMIT_PER_MINUTE: "100000",
  RATE_LIMIT_FULL_KEY_PER_DAY: "1000000",
  RATE_LIMIT_UPLOAD_KEY_PER_DAY: "1000000",
  RATE_LIMIT_IP_PER_DAY: "1000000",
  RATE_LIMIT_PIECES_PER_MINUTE: "100000",
  RATE_LIMIT_BAD_KEY_PER_MINUTE: "100000",
};
