"""Tests of driver.discovery and the discover/make-sysfs/show commands."""
