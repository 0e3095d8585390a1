ALTER TABLE `accounts` ADD `signing_secret` text;--> statement-breakpoint
ALTER TABLE `accounts` ADD `signing_secret_created_at` integer;--> statement-breakpoint
ALTER TABLE `uploads` ADD `focal_x` real;--> statement-breakpoint
ALTER TABLE `uploads` ADD `focal_y` real;--> statement-breakpoint
ALTER TABLE `uploads` ADD `placeholder` text;--> statement-breakpoint
ALTER TABLE `uploads` ADD `color` text;--> statement-breakpoint
CREATE INDEX `uploads_placeholder_missing` ON `uploads` (`id`) WHERE placeholder IS NULL AND thumb_key IS NOT NULL;