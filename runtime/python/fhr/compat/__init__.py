"""Drop-in modules for programs written against other residency managers."""
