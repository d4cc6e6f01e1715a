// A memory cgroup for a local sandbox: the limit Docker puts on a container
// (and so the one Harbor's memory_mb means), on the memory its processes
// use, not on what they map. Where the host has no memory controller we may
// write (not root, a read-only /sys/fs/cgroup), the local backend falls back
// to RLIMIT_DATA, which also counts private writable mappings never touched:
// V8 maps its code range writable, once per isolate, so a Node.js harness
// with worker threads (OpenClaw) fails at 2 GB under it and runs under this.
#pragma once

#include <cstdint>
#include <string>

namespace forge::sandbox::local {

// Makes the cgroup forge-local/NAME with a limit of bytes, under cgroup v2's
// root or v1's memory hierarchy; returns its directory, "" when it cannot.
std::string CreateMemoryCgroup(const std::string& name, int64_t bytes);

// The file a process writes "0" to, to move itself into the cgroup at dir.
std::string CgroupProcsFile(const std::string& dir);

// Removes the cgroup once its processes are gone (waits up to a second for
// killed ones to exit). Harmless when dir is "" or already removed.
void RemoveMemoryCgroup(const std::string& dir);

}  // namespace forge::sandbox::local
