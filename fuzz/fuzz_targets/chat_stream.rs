//! Arbitrary Chat Completions stream data (as `data:` lines) through the provider's chunk
//! reader and processing: never panics, always ends in exactly one terminal event.
#![no_main]

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use oxpi_ai::internals::{ChunkProcessor, ChunkReader, OpenAiCompat};
use oxpi_ai::{AssistantMessageEventStream, Model, ReplyBuilder};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(_) => return,
    };
    runtime.block_on(async move {
        let mut model = Model::openai_compatible("http://fuzz.invalid/v1", "m");
        model.compat = Some(serde_json::json!({"toolCallsInText": text.len() % 2 == 0}));
        let compat = OpenAiCompat::for_model(&model).unwrap_or_else(|_| unreachable!());
        let (sink, mut events) = AssistantMessageEventStream::channel(None);
        let producer = async move {
            let out = ReplyBuilder::new(&model, sink);
            let mut processor = ChunkProcessor::new(out, &model, &compat, vec!["read".into()]);
            let mut reader = ChunkReader::new();
            for line in text.lines() {
                let Some(data) = line.strip_prefix("data:") else { continue };
                match reader.read(data.trim()) {
                    Ok(mut chunk) => {
                        if let Err(e) = processor.process(&mut chunk).await {
                            processor.fail(e).await;
                            return;
                        }
                    }
                    Err(e) => {
                        processor.fail(oxpi_ai::Failure::parse(e.to_string())).await;
                        return;
                    }
                }
            }
            processor.finish().await;
        };
        let consumer = async move {
            let mut terminals = 0;
            while let Some(event) = events.next().await {
                if event.is_terminal() {
                    terminals += 1;
                }
            }
            terminals
        };
        let ((), terminals) = futures::join!(producer, consumer);
        assert_eq!(terminals, 1);
    });
});
