CREATE TABLE `listing_totals` (
	`listing` text PRIMARY KEY NOT NULL,
	`total` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `uploads_account_expiring` ON `uploads` (`account_id`,`expires_at`) WHERE expires_at IS NOT NULL AND files_removed_at IS NULL;--> statement-breakpoint
CREATE INDEX `uploads_public_expiring` ON `uploads` (`expires_at`) WHERE visibility = 'public' AND expires_at IS NOT NULL AND files_removed_at IS NULL;--> statement-breakpoint
INSERT INTO `listing_totals` (`listing`, `total`) SELECT 'uploads', count(*) FROM `uploads`
  WHERE visibility = 'public' AND files_removed_at IS NULL AND NOT (max_views IS NOT NULL AND views >= max_views);--> statement-breakpoint
INSERT INTO `listing_totals` (`listing`, `total`) SELECT 'albums', count(*) FROM `albums` WHERE visibility = 'public';--> statement-breakpoint
CREATE TRIGGER `uploads_listed_insert` AFTER INSERT ON `uploads`
WHEN NEW.visibility = 'public' AND NEW.files_removed_at IS NULL AND NOT (NEW.max_views IS NOT NULL AND NEW.views >= NEW.max_views)
BEGIN
  UPDATE `listing_totals` SET `total` = `total` + 1 WHERE `listing` = 'uploads';
END;--> statement-breakpoint
CREATE TRIGGER `uploads_listed_delete` AFTER DELETE ON `uploads`
WHEN OLD.visibility = 'public' AND OLD.files_removed_at IS NULL AND NOT (OLD.max_views IS NOT NULL AND OLD.views >= OLD.max_views)
BEGIN
  UPDATE `listing_totals` SET `total` = `total` - 1 WHERE `listing` = 'uploads';
END;--> statement-breakpoint
CREATE TRIGGER `uploads_listed_update` AFTER UPDATE OF `visibility`, `files_removed_at`, `max_views`, `views` ON `uploads`
WHEN (NEW.visibility = 'public' AND NEW.files_removed_at IS NULL AND NOT (NEW.max_views IS NOT NULL AND NEW.views >= NEW.max_views))
  <> (OLD.visibility = 'public' AND OLD.files_removed_at IS NULL AND NOT (OLD.max_views IS NOT NULL AND OLD.views >= OLD.max_views))
BEGIN
  UPDATE `listing_totals` SET `total` = `total`
    + (NEW.visibility = 'public' AND NEW.files_removed_at IS NULL AND NOT (NEW.max_views IS NOT NULL AND NEW.views >= NEW.max_views))
    - (OLD.visibility = 'public' AND OLD.files_removed_at IS NULL AND NOT (OLD.max_views IS NOT NULL AND OLD.views >= OLD.max_views))
    WHERE `listing` = 'uploads';
END;--> statement-breakpoint
CREATE TRIGGER `albums_listed_insert` AFTER INSERT ON `albums` WHEN NEW.visibility = 'public'
BEGIN
  UPDATE `listing_totals` SET `total` = `total` + 1 WHERE `listing` = 'albums';
END;--> statement-breakpoint
CREATE TRIGGER `albums_listed_delete` AFTER DELETE ON `albums` WHEN OLD.visibility = 'public'
BEGIN
  UPDATE `listing_totals` SET `total` = `total` - 1 WHERE `listing` = 'albums';
END;--> statement-breakpoint
CREATE TRIGGER `albums_listed_update` AFTER UPDATE OF `visibility` ON `albums`
WHEN (NEW.visibility = 'public') <> (OLD.visibility = 'public')
BEGIN
  UPDATE `listing_totals` SET `total` = `total` + (NEW.visibility = 'public') - (OLD.visibility = 'public')
    WHERE `listing` = 'albums';
END;
