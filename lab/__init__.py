"""The migrate-offload lab: build, boot and test the kernel series (see lab/molab)."""
