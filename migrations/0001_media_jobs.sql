CREATE TABLE `media_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`upload_id` text NOT NULL,
	`source_key` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`lease_until` integer,
	`next_attempt_at` integer NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `media_jobs_source` ON `media_jobs` (`upload_id`,`source_key`);--> statement-breakpoint
CREATE INDEX `media_jobs_due` ON `media_jobs` (`status`,`next_attempt_at`);