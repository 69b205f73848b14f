"""Our reward functions go to trl.GRPOTrainer unchanged, and it trains our tiny policy with them."""

import datasets
import pytest

from fedrl_kit.rewards import accuracy_reward, format_reward, tag_count_reward


def test_rewards_drive_trl_grpo_trainer(tiny_dir, tmp_path):
    trl = pytest.importorskip("trl")
    from fedrl_kit.policy.hub import load_pretrained

    model, tok = load_pretrained(tiny_dir)
    ds = datasets.Dataset.from_dict({"prompt": ["1+1=", "2+3=", "4+4=", "max(1,2)="], "answer": ["2", "5", "8", "2"]})
    seen = {}

    def spy(prompts, completions, answer, **kw):
        seen["answer"] = list(answer)
        return accuracy_reward(prompts, completions, answer=answer, **kw)

    cfg = trl.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=4,
                         max_completion_length=6, max_steps=1, report_to="none", use_cpu=True, logging_steps=1,
                         bf16=False, save_strategy="no")
    trainer = trl.GRPOTrainer(model=model, processing_class=tok, reward_funcs=[spy, format_reward, tag_count_reward],
                              args=cfg, train_dataset=ds)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert seen["answer"] and set(seen["answer"]) <= {"2", "5", "8"}
    assert "rewards/format_reward/mean" in logged and "rewards/tag_count_reward/mean" in logged
