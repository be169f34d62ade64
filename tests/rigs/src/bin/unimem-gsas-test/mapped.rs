//! `unimem-gsas-test check mapped-stale`: a page read through a mapping (`gsas`'s reads through
//! mappings, docs/GSAS.md) is freed, then taken by another tree, which writes into it: the
//! reader's next reads must fail as the service says (fault, then denied), never return the
//! other tree's bytes, and the withdrawn mapping must not kill the process (SIGBUS).

use crate::checks::Checks;
use anyhow::{bail, Result};
use gsas::cli::Ctx;
use gsas::TreeSource;
use std::time::{Duration, Instant};

const MINE: u128 = 0x1111_2222_3333_4444_5555_6666_7777_8888;
const SECRET: u128 = 0x5ec2_e75e_c2e7_5ec2_e75e_c2e7_5ec2_e75e;

/// Reads `a` four times (the first ones go to the service, then it is mapped): how many went
/// through the mapping.
fn read_mapped(g: &gsas::Gsas, c: &mut Checks, a: u64, what: &str) -> Result<u64> {
    let before = g.stats().mapped_reads;
    for i in 0..4 {
        let w = g.read256(a)?;
        c.expect(
            &format!("READ256 {i} of {what}"),
            w[0] as u128 | (w[1] as u128) << 64 == MINE,
            format!("{w:x?}"),
        );
    }
    let mapped = g.stats().mapped_reads - before;
    c.expect(
        &format!("the last reads of {what} went through a mapping"),
        mapped >= 1,
        format!("{mapped} of 4 reads through a mapping"),
    );
    Ok(mapped)
}

pub fn stale(ctx: &Ctx, node: u16, json: bool) -> Result<i32> {
    let g = ctx.open()?;
    let mut c = Checks::new(json);
    // Freed by this handle: its mapping goes with the free.
    let b = g.alloc_shared_page(node, 1)?;
    g.write128(b, MINE)?;
    read_mapped(&g, &mut c, b, "a page this handle frees")?;
    g.free(b)?;
    c.expect_err("READ256 of it once freed", g.read256(b), &["fault"]);

    // Freed by another handle of the tree: the mapping stays cached here until the home's ZAP
    // removes it; the page is given to another tree only after that.
    let a = g.alloc_shared_page(node, 1)?;
    g.write128(a, MINE)?;
    read_mapped(&g, &mut c, a, "a page another handle frees")?;
    let before = g.stats();
    ctx.open()?.free(a)?;
    let other = ctx.open_in(TreeSource::Fresh)?;
    let (mut held, t0) = (Vec::new(), Instant::now());
    let got = loop {
        let p = other.alloc_shared_page(node, 1)?;
        if p == a {
            break true;
        }
        held.push(p);
        if t0.elapsed() > Duration::from_secs(20) || held.len() > 4096 {
            break false;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    for p in held.drain(..) {
        other.free(p)?;
    }
    if !got {
        bail!("another tree never got page {a:#x} back");
    }
    other.write128(a, SECRET)?;
    other.write128(a + 16, SECRET)?;
    c.expect_err(
        "READ256 of it, now another tree's",
        g.read256(a),
        &["denied"],
    );
    c.expect_err("READ128 of it", g.read128(a + 16), &["denied"]);
    c.expect_err("READ of it", g.read(a + 8), &["denied"]);
    c.expect_err("READ32 of it", g.read32(a + 4), &["denied"]);
    let s = g.stats().since(&before);
    c.expect(
        "those reads found the mapping withdrawn and asked the service",
        s.mapped_reads == 0 && s.mapped_fallbacks >= 1,
        format!(
            "{} mapped, {} fallbacks",
            s.mapped_reads, s.mapped_fallbacks
        ),
    );
    other.free(a)?;
    Ok(c.finish("mapped-stale"))
}
