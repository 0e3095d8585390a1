CREATE TABLE `webhook_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`endpoint_id` text NOT NULL,
	`event_id` text NOT NULL,
	`type` text NOT NULL,
	`attempt` integer NOT NULL,
	`status_code` integer,
	`error` text,
	`duration_ms` integer NOT NULL,
	`next_retry_at` integer,
	`response` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_endpoint` ON `webhook_attempts` (`endpoint_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`event_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`lease_until` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`event_id`, `endpoint_id`),
	FOREIGN KEY (`event_id`) REFERENCES `webhook_events`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint` ON `webhook_deliveries` (`endpoint_id`,`status`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`next_attempt_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_leased` ON `webhook_deliveries` (`endpoint_id`,`lease_until`) WHERE lease_until IS NOT NULL;--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`url` text NOT NULL,
	`description` text,
	`events` text,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_until` integer,
	`origin` text NOT NULL,
	`failing_since` integer,
	`disabled_at` integer,
	`disabled_reason` text,
	`dropped_events` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_account` ON `webhook_endpoints` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`type` text NOT NULL,
	`subject` text NOT NULL,
	`detail` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_events_created` ON `webhook_events` (`created_at`);--> statement-breakpoint
ALTER TABLE `uploads` ADD `processing_state` text DEFAULT 'ready' NOT NULL;--> statement-breakpoint
ALTER TABLE `uploads` ADD `processing_percent` integer;--> statement-breakpoint
ALTER TABLE `uploads` ADD `processing_error` text;--> statement-breakpoint
ALTER TABLE `uploads` ADD `processing_updated_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Uploads from before the column: their state from the media job of the file they point at, if any.
UPDATE `uploads` SET
	`processing_state` = coalesce((
		SELECT CASE j.`status` WHEN 'pending' THEN 'queued' WHEN 'running' THEN 'queued' WHEN 'failed' THEN 'failed' ELSE 'ready' END
		FROM `media_jobs` j WHERE j.`upload_id` = `uploads`.`id` AND j.`source_key` = `uploads`.`object_key`
		ORDER BY j.`created_at` DESC LIMIT 1
	), 'ready'),
	`processing_error` = (
		SELECT j.`last_error` FROM `media_jobs` j
		WHERE j.`upload_id` = `uploads`.`id` AND j.`source_key` = `uploads`.`object_key` AND j.`status` = 'failed'
		ORDER BY j.`created_at` DESC LIMIT 1
	),
	`processing_updated_at` = `updated_at`;
