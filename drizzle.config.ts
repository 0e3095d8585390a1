import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes a new SQL migration into migrations/ from the schema files of src/model/.
export default defineConfig({
  dialect: "sqlite",
  schema: ["./src/model/schema.ts", "./src/model/webhook-schema.ts", "./src/model/sign-in-schema.ts"],
  out: "./migrations",
});
