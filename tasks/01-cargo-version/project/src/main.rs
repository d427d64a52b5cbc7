fn main() { println!("tally"); }
