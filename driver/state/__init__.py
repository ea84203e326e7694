"""Prepare/unprepare: preparation-time revalidation, CDI specs and the crash-safe checkpoint."""
