import sharp from "sharp";
import { loadConfig } from "./config";
import { createServer } from "./server";

const config = loadConfig();
const server = createServer(config);
server.requestTimeout = 0; // bodies of 200 MB on slow links; each job has its own time limit
server.listen(config.port, config.host, () => {
  console.log(
    `media service on ${config.host}:${config.port} (ffmpeg: ${config.ffmpeg}, libvips ${sharp.versions.vips})`,
  );
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
