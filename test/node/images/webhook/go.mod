// The test webhook's module: standard library only, so it builds offline from the Go cache.
module portcullis.dev/node-webhook

go 1.26.0
