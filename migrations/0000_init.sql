CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`banned_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_keys` (
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`key_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `kind`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE TABLE `ip_bans` (
	`ip` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`type` text NOT NULL,
	`object_key` text NOT NULL,
	`mime` text NOT NULL,
	`size` integer NOT NULL,
	`etag` text NOT NULL,
	`width` integer,
	`height` integer,
	`thumb_key` text,
	`content_hash` text NOT NULL,
	`dedup_hash` text,
	`visibility` text DEFAULT 'unlisted' NOT NULL,
	`title` text,
	`description` text,
	`expires_at` integer,
	`delete_token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `uploads_account_created` ON `uploads` (`account_id`,`created_at`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `uploads_dedup` ON `uploads` (`account_id`,`dedup_hash`) WHERE dedup_hash IS NOT NULL;--> statement-breakpoint
CREATE INDEX `uploads_account_hash` ON `uploads` (`account_id`,`content_hash`);--> statement-breakpoint
CREATE INDEX `uploads_expires` ON `uploads` (`expires_at`) WHERE expires_at IS NOT NULL;