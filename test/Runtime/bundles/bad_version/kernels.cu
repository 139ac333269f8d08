// never compiled: the manifest is rejected first
