ALTER TABLE `accounts` ADD `usage_checked_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `accounts_usage_checked` ON `accounts` (`usage_checked_at`);--> statement-breakpoint
-- Existing accounts start with what they store: their uploads whose files are still stored.
UPDATE `accounts` SET
	`bytes_used` = (SELECT coalesce(sum(`size`), 0) FROM `uploads` WHERE `uploads`.`account_id` = `accounts`.`id` AND `files_removed_at` IS NULL),
	`uploads_used` = (SELECT count(*) FROM `uploads` WHERE `uploads`.`account_id` = `accounts`.`id` AND `files_removed_at` IS NULL);
