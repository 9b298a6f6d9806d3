//! The parsers compared for the native core, with the system allocator.

mod bench;

fn main() {
    bench::main("system");
}
