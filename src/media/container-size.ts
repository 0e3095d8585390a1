/**
 * How the media service's containers are sized, in one place. wrangler.toml's `[[containers]]`
 * must say the same (`max_instances`, `instance_type`): test/node/container-size.test.ts checks it.
 *
 * standard-1 (1/2 vCPU, 4 GiB, 8 GB disk): measured in the service's own image (Debian's ffmpeg,
 * sharp, libheif), one job's peak is 53 MiB for a short AVI to MP4, 289 MiB for a 12 MP HEIC to
 * WebP and 391 MiB for 10 s of 1080p to MP4; two HEICs at once peak at 341 MiB, and a container
 * that has decoded a HEIC keeps about 230 MiB, so a video after it peaked at 555 MiB. Two jobs at
 * once (MAX_CONCURRENT_JOBS) can therefore pass basic's 1 GiB; standard-1 leaves over 3x that.
 * Its disk holds the 1.05 GB image plus the service's temporary space (inputs of up to 210 MiB,
 * outputs of up to twice that, for the running and queued jobs) with room to spare; basic's 4 GB
 * would be nearly full.
 */
export const MEDIA_INSTANCE_TYPE = "standard-1";
/** Containers the jobs are spread over: wrangler.toml's max_instances. */
export const MEDIA_INSTANCES = 3;
/** Jobs one container runs at once; more wait in its queue. */
export const MEDIA_CONCURRENT_JOBS = 2;
/**
 * Of the places the containers offer (each runs MEDIA_CONCURRENT_JOBS and queues more), variants
 * take at most this many at once, one per container: a variant is made while a client waits, and
 * a flood of them (one unreadable file asked at every width) must leave media jobs their room.
 */
export const VARIANT_SERVICE_SLOTS = MEDIA_INSTANCES;
/** Jobs each container queues beyond those it runs (the service's MAX_QUEUED_JOBS default). */
export const MEDIA_QUEUED_JOBS = 8;
/**
 * Media job runners working at once: wrangler.toml's `[workflows.concurrency] limit`. The
 * platform queues instances past it and starts them as others finish (a sleeping runner holds no
 * place), so a burst of uploads waits there rather than polling a full service. It is every
 * place the containers offer, less the variants' share.
 */
export const MEDIA_JOB_RUNNERS = MEDIA_INSTANCES * (MEDIA_CONCURRENT_JOBS + MEDIA_QUEUED_JOBS) - VARIANT_SERVICE_SLOTS;
