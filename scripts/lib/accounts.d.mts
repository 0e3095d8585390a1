/** Types of accounts.mjs, for TypeScript callers (the tests). */

/** An account as POST /admin/accounts answers it. */
export interface NewAccount {
  id: string;
  name: string;
  full_key: string;
  upload_key: string;
}

export function createAccount(options: {
  /** The service's origin, without a trailing slash. */
  origin: string;
  adminToken: string;
  name: string;
  /** fetch (the default), or a test's own way into the Worker. */
  send?: (url: string, init: RequestInit) => Promise<Response>;
}): Promise<NewAccount>;
