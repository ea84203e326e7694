"""Sub-commands of `fake-dra`. Each module here exposes `register(subparsers)`.

driver.cli discovers the modules in this package, so adding a command never edits a shared file.
"""
