"""The ground floor every other package stands on: canonical hashing, errors, configs, files, git."""
