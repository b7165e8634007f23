// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
//! inlrs - Rust workload for the inlined-frames test (built by the test with
//! rustc -C opt-level=2 -g, legacy and v0 mangling): the hot work is in
//! `heavy`, always inlined into `bp_rs_outer`, which is never inlined.
//! Usage: inlrs SECONDS
use std::time::{Duration, Instant};

/// std::hint::black_box is stable only from Rust 1.66; Debian 12 has 1.63.
#[inline(always)]
fn black_box(x: u64) -> u64 {
    unsafe { std::ptr::read_volatile(&x) }
}

#[inline(always)]
fn heavy(mut x: u64) -> u64 {
    for i in 0..4000u64 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i)); // heavy's line
    }
    x
}

#[inline(never)]
fn bp_rs_outer(x: u64) -> u64 {
    heavy(x) ^ 1 // bp_rs_outer calls heavy
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let mut x = 1u64;
    while Instant::now() < until {
        for _ in 0..1000 {
            x = bp_rs_outer(black_box(x));
        }
    }
    println!("{}", x & 1);
}
