//! The same measurements with mimalloc as the global allocator.

#[path = "bench.rs"]
mod bench;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    bench::main("mimalloc");
}
