//! Calls from several threads at once share the core's pool: each gets the
//! bits of a 1-thread call, back to back and at the same time, while the
//! pool's threads are awake between calls and after they have parked.

mod support;

use bob_core::{train, Kernel, Options, Planes, BOB_V1_ADAMW};

fn trained(threads: usize, calls: u64) -> Vec<u32> {
    let ([mut p, mut m, mut v], [contexts, targets]) = support::all_rows_live();
    for call in 0..calls {
        let planes = Planes::new(&mut p, &mut m, &mut v).expect("a square table");
        train(planes, &contexts, &targets, 10 * call, 10, &BOB_V1_ADAMW, Options { kernel: Kernel::Auto, threads })
            .expect("valid arguments");
        if call % 4 == 3 {
            // Long enough for the pool's threads to sleep: the next call wakes them.
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    [p, m, v].concat().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn callers_on_several_threads_at_once_get_the_one_thread_bits() {
    let calls = 12;
    let expected = trained(1, calls);
    std::thread::scope(|scope| {
        let callers: Vec<_> = (0..3).map(|_| scope.spawn(|| trained(2, calls))).collect();
        for caller in callers {
            assert!(caller.join().expect("a caller thread") == expected, "a concurrent 2-thread caller got other bits");
        }
    });
}
