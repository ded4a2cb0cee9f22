"""The Chinese edition (issue 34) never drifts from the English: every English markdown paragraph has a current
translation that keeps its code, links, formulas, numbers and the series' terms; notebooks/zh_CN/ is exactly what
the catalogues generate, with the English code cells and metadata; an English edit without its translation fails;
README.zh-CN.md has README.md's sections, commands and table."""

import json
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from helpers import translation

NOTEBOOKS = translation.english_notebooks()
README, README_ZH = translation.ROOT / "README.md", translation.README_ZH


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_paragraph_has_a_current_consistent_translation_and_the_chinese_notebook_is_generated(notebook):
    assert translation.check(notebook) == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_chinese_notebook_has_the_english_code_and_metadata(notebook):
    english = json.loads(notebook.read_text(encoding="utf-8"))
    chinese = json.loads((translation.CHINESE / notebook.name).read_text(encoding="utf-8"))
    assert chinese["metadata"] == english["metadata"]
    assert [c["cell_type"] for c in chinese["cells"]] == [c["cell_type"] for c in english["cells"]]
    for en, zh in zip(english["cells"], chinese["cells"], strict=True):
        if en["cell_type"] == "code":
            assert zh == en
        else:
            assert zh["metadata"] == en["metadata"]
            assert re.search(r"[\u4e00-\u9fff]", "".join(zh["source"])), "a markdown cell in Chinese"


def test_the_glossary_has_one_chinese_term_per_english_term():
    glossary = translation.read_glossary()
    assert len(glossary) >= 30
    english = [term.lower() for term, _ in glossary]
    assert len(set(english)) == len(english)
    assert all(re.search(r"[\u4e00-\u9fff]", chinese) for _, chinese in glossary)


def test_the_glossary_lists_forbidden_variants_that_are_nobodys_term():
    variants = translation.read_variants()
    forbidden = {variant: term for term, listed in variants for variant in listed}
    assert {"worker", "全规约", "逐比特", "冲刷", "下线", "退役", "world 通信组", "et al"} <= set(forbidden)
    # the Chinese review of 15–16 (issue 53): each variant it found is forbidden, beside the series' term
    assert {variant: forbidden[variant] for variant in (
        "all-reduce", "all-gather", "reduce-scatter", "步长", "藏在", "流水线级", "两级流水线", "的单元", "卡上内存",
        "每卡内存", "性能调试", "发起…算子", "配方", "embedding", "block")} == {
        "all-reduce": "AllReduce", "all-gather": "AllGather", "reduce-scatter": "ReduceScatter", "步长": "每步时间",
        "藏在": "掩盖", "流水线级": "阶段", "两级流水线": "阶段", "的单元": "单元格", "卡上内存": "显存",
        "每卡内存": "显存", "性能调试": "性能分析", "发起…算子": "下发", "配方": "官方发布的配置",
        "embedding": "嵌入层", "block": "块"}
    assert forbidden["全规约"] == "全归约" and forbidden["逐比特"] == "逐位" and forbidden["worker"] == "工作进程"
    terms = {chinese for _, chinese in translation.read_glossary()} | {term for term, _ in variants}
    assert not any(variant in term for variant in forbidden for term in terms if term != forbidden[variant]), \
        "a forbidden variant inside another row's term would forbid that term"
    assert translation.style_problems(" ".join(terms), variants) == [], "no term is another row's variant"


def test_paragraphs_split_at_blank_lines_but_not_inside_a_code_fence():
    text = "# Title\nline two\n\n```python\na = 1\n\nb = 2\n```\n\n\nlast"
    assert translation.paragraphs(text) == ["# Title\nline two", "```python\na = 1\n\nb = 2\n```", "last"]


def test_links_are_relocated_for_the_chinese_folder():
    text = ("[a](../README.md) [b](02_parallel_modes.ipynb#loss) [c](https://x.org/a) [d](#Glossary) "
            "[e](scripts/gpt.py)")
    assert translation._relink(text) == ("[a](../../README.zh-CN.md) [b](02_parallel_modes.ipynb#loss) "
                                         "[c](https://x.org/a) [d](#Glossary) [e](../scripts/gpt.py)")


@pytest.mark.parametrize("chinese, problem", [
    ("用 `init()` 初始化，数据并行用时 20 秒、占 1.5 GB，见 [02](02_parallel_modes.ipynb)，$a+b$。", None),
    ("用 init() 初始化，数据并行用时 20 秒、占 1.5 GB，见 [02](02_parallel_modes.ipynb)，$a+b$。", "lost '`init()`'"),
    ("用 `init()` 初始化，数据并行用时 20 秒、占 1.5 GB，见 02，$a+b$。", "lost '02_parallel_modes.ipynb'"),
    ("用 `init()` 初始化，数据并行用时 20 秒、占 1.5 GB，见 [02](02_parallel_modes.ipynb)。", "lost '$a+b$'"),
    ("用 `init()` 初始化，数据并行用时 2 秒、占 1.5 GB，见 [02](02_parallel_modes.ipynb)，$a+b$。",
     "lost the number 20 s"),
    ("用 `init()` 初始化，数据并行用时 20 秒、占 1.5 MB，见 [02](02_parallel_modes.ipynb)，$a+b$。",
     "lost the number 1.5 GB"),
    ("用 `init()` 初始化，数据平行用时 20 秒、占 1.5 GB，见 [02](02_parallel_modes.ipynb)，$a+b$。",
     "'data parallel' is 数据并行 in this series"),
])
def test_a_translation_must_keep_code_links_formulas_numbers_and_terms(chinese, problem):
    english = ("Initialise with `init()`; a data-parallel run took 20 s and 1.5 GB, see "
               "[02](02_parallel_modes.ipynb), $a+b$.")
    found = translation.problems(english, chinese, translation.read_glossary())
    assert found == ([] if problem is None else [problem])


@pytest.fixture
def small_series(tmp_path, monkeypatch):
    """A one-notebook series in tmp_path, its catalogue translated: (English notebook, catalogue path)."""
    monkeypatch.setattr(translation, "CATALOGUES", tmp_path / "translations")
    monkeypatch.setattr(translation, "CHINESE", tmp_path / "notebooks" / "zh_CN")
    monkeypatch.setattr(translation, "ROOT", tmp_path)
    notebook = tmp_path / "notebooks" / "01_small.ipynb"
    notebook.parent.mkdir()
    nbformat.write(new_notebook(cells=[
        new_markdown_cell("# 01 · Small\n\nEvery rank runs `init()`;\nthe loss falls."),
        new_code_cell("print('loss', 1.0)"),
        new_markdown_cell("Back to the [overview](../README.md)."),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}), notebook)
    path = translation.update(notebook)
    catalogue = translation.read_catalogue(path)
    zh = {"# 01 · Small": "# 01 · 小例子",
          "Every rank runs `init()`;\nthe loss falls.": "每个 rank 运行 `init()`；损失下降。",
          "Back to the [overview](../README.md).": "返回[本系列概览](../README.md)。"}
    for entry in catalogue:
        entry.msgstr = zh[entry.msgid]
    translation.write_catalogue(catalogue, path)
    translation.generate(notebook)
    return notebook, path


def test_a_translator_comment_lifts_a_term_used_in_another_sense(small_series):
    notebook, path = small_series
    glossary = [("loss", "损失")]
    catalogue = translation.read_catalogue(path)
    catalogue.find("Every rank runs `init()`;\nthe loss falls.").msgstr = "每个 rank 运行 `init()`；它下降。"
    translation.write_catalogue(catalogue, path)
    translation.generate(notebook)
    assert [problem.split(" in the translation")[0] for problem in translation.check(notebook, glossary)] == [
        "01_small.ipynb cell 1: 'loss' is 损失 in this series"]
    catalogue.find("Every rank runs `init()`;\nthe loss falls.").tcomment = "not a term: loss, weight"
    translation.write_catalogue(catalogue, path)
    assert "# not a term: loss, weight" in path.read_text(encoding="utf-8")
    assert translation.check(notebook, glossary) == []


def test_an_english_edit_without_its_translation_fails_and_update_marks_it_fuzzy_with_the_old_english(small_series):
    notebook, path = small_series
    assert translation.check(notebook, []) == []
    chinese = json.loads((translation.CHINESE / notebook.name).read_text(encoding="utf-8"))
    assert "".join(chinese["cells"][2]["source"]) == "返回[本系列概览](../../README.zh-CN.md)。"
    assert "".join(chinese["cells"][0]["source"]).split("\n\n")[1] == (
        "> 英文原版 (English edition): [01_small.ipynb](../01_small.ipynb)"), "under the title"

    nb = nbformat.read(notebook, as_version=4)
    nb.cells[0].source = "# 01 · Small\n\nEvery rank runs `init()`;\nthe loss falls fast."
    nbformat.write(nb, notebook)
    assert any("no entry" in problem for problem in translation.check(notebook, []))
    with pytest.raises(KeyError, match="has no entry"):
        translation.generate(notebook)

    translation.update(notebook)
    entry = translation.read_catalogue(path).find("Every rank runs `init()`;\nthe loss falls fast.")
    assert entry.fuzzy and entry.previous_msgid == "Every rank runs `init()`;\nthe loss falls."
    assert entry.msgstr == "每个 rank 运行 `init()`；损失下降。", "the old translation is kept for the translator"
    assert '#| msgid ""\n#| "Every rank runs `init()`;\\n"\n#| "the loss falls."' in path.read_text(encoding="utf-8")
    translation.update(notebook)
    entry = translation.read_catalogue(path).find("Every rank runs `init()`;\nthe loss falls fast.")
    assert entry.fuzzy and entry.previous_msgid == "Every rank runs `init()`;\nthe loss falls.", "kept until fixed"
    assert any("fuzzy" in problem for problem in translation.check(notebook, []))

    catalogue = translation.read_catalogue(path)
    entry = catalogue.find("Every rank runs `init()`;\nthe loss falls fast.")
    entry.msgstr, entry.flags = "每个 rank 运行 `init()`；损失很快下降。", []
    translation.write_catalogue(catalogue, path)
    assert any("not what the catalogue generates" in problem for problem in translation.check(notebook, []))
    translation.generate(notebook)
    assert translation.check(notebook, []) == []
    before = path.read_bytes()
    translation.update(notebook)
    assert path.read_bytes() == before, "updating an up-to-date catalogue changes nothing"


def sections(markdown: str) -> list[str]:
    """The heading levels, in order."""
    return [line.split()[0] for line in re.sub(r"```.*?```", "", markdown, flags=re.S).splitlines()
            if re.match(r"#+ ", line)]


def commands(markdown: str) -> list[list[str]]:
    """Each ``` block's lines with their comments stripped (the code before `#`), comment-only lines dropped."""
    return [[code for line in block.splitlines() if (code := line.split("#")[0].rstrip())]
            for block in re.findall(r"```.*?```", markdown, flags=re.S)]


def test_readme_commands_are_compared_without_their_comments():
    english = "```bash\nmake demo   # a real training\n            # on all ranks\n# then\nmake zh\n```"
    assert commands(english) == [["```bash", "make demo", "make zh", "```"]]
    assert commands("```bash\nmake demo   # 真实的训练\n# 然后\nmake zh  # 再一次\n```") == commands(english)
    assert commands("```bash\nmake demo --x   # 真实的训练\nmake zh\n```") != commands(english)


def test_the_chinese_readme_has_the_same_sections_commands_and_notebooks():
    english, chinese = README.read_text(encoding="utf-8"), README_ZH.read_text(encoding="utf-8")
    assert "README.zh-CN.md" in english.split("\n\n")[1], "README.md links its Chinese edition at the top"
    assert sections(chinese) == sections(english)
    assert commands(chinese) == commands(english), "the same commands; only the comments after # are translated"
    notebooks = [f"notebooks/zh_CN/{name}" for name in re.findall(r"\(notebooks/(\d\d_\w+\.ipynb)\)", english)]
    assert re.findall(r"\((notebooks/zh_CN/\d\d_\w+\.ipynb)\)", chinese) == notebooks
    assert all((translation.ROOT / link).is_file() for link in notebooks), "every Chinese notebook exists"
    assert set(re.findall(r"`[^`\n]+`", english)) <= set(re.findall(r"`[^`\n]+`", chinese)), "inline code kept"


@pytest.mark.parametrize("chinese, problem", [
    ("每个工作进程把日志写入 `worker_0.log` 或 worker_1.log，由 `--worker_num` 或 --worker_num 决定。", None),
    ("每个工作进程（worker）各占一张卡；msrun 的 Worker 进程见 [日志](worker_0.log)。", "'Worker' where the series"),
    ("一个 worker 在 epoch 中途死亡。", "'worker' where the series writes 工作进程"),
    ("两个 workers 在 epoch 中途死亡。", "'workers' where the series writes 工作进程"),
    ("AllReduce（全规约）对张量求和。", "'全规约' where the series writes 全归约"),
    ("权重逐比特相同。", "'逐比特' where the series writes 逐位"),
    ("梯度被冲刷为零。", "'冲刷' where the series writes 下溢为零"),
    ("它将于 2026 年 Q4 退役。", "'退役' where the series writes 日落"),
    ("CPU 上只能用 world 通信组。", "'world 通信组' where the series writes 全局通信组"),
    ("见 Korthikanti et al. 2022 的公式。", "'et al' where the series writes 等人"),
    ("它们的 *rank*（**通信组大小**）、`a*b*c` 与 $a*b*c$ 都不算斜体。\n* 列表项\n* 另一项", None),
    ("每个 rank 的数据是*不同*的。", "italic Chinese '*不同*'"),
    ("每个 rank 的数据是_不同_的，而 rank_id 与 a_b 不是斜体。", "italic Chinese '_不同_'"),
    ("该字段 ***必须*** 是字符串。", "italic Chinese '*必须*'"),
    ("它打印“not attempted yet”，`\"x\"` 是代码。", None),
    ('它打印 "not attempted yet"。', "ASCII quotes"),
    ("实测异步 all-reduce 的重叠。", "'all-reduce' where the series writes AllReduce"),
    ("实测异步 AllReduce 的重叠；`all-reduce` 是代码。", None),
    ("规划工具估计的步长时间。", "'步长' where the series writes 每步时间"),
    ("把梯度的 AllReduce 藏在反向传播之后。", "'藏在' where the series writes 掩盖"),
    ("数据并行与两级流水线各占一半。", "'两级流水线' where the series writes 阶段"),
    ("下面的单元打印命令。", "'的单元' where the series writes 单元格"),
    ("下面的单元格打印命令；昇腾 Cube 单元上的 float16 更快。", None),
    ("PyNative 的一步要发起数百个小算子。", "'发起数百个小算子' where the series writes 下发"),
    ("启动作业后，PyNative 的一步要下发数百个小算子。", None),
    ("用 Profiler 做性能调试。", "'性能调试' where the series writes 性能分析"),
    ("与已发布的配方对照。", "'配方' where the series writes 官方发布的配置"),
    ("编号小的 rank 持有 embedding。", "'embedding' where the series writes 嵌入层"),
    ("读取卡上内存分配器的峰值。", "'卡上内存' where the series writes 显存"),
])
def test_the_style_check_finds_forbidden_variants_italic_chinese_and_ascii_quotes_outside_code(chinese, problem):
    found = translation.style_problems(chinese, translation.read_variants())
    assert (found == []) if problem is None else (len(found) == 1 and problem in found[0]), found


def test_the_check_fails_on_a_catalogue_with_a_forbidden_variant_or_italic_chinese(small_series):
    notebook, path = small_series
    assert translation.check(notebook, []) == []
    paragraph = "Every rank runs `init()`;\nthe loss falls."
    for chinese, problem in [("每个 worker 运行 `init()`；损失下降。", "'worker' where the series writes 工作进程"),
                             ("每个 rank 运行 `init()`；损失*下降*。", "italic Chinese '*下降*'"),
                             ("每个 rank 运行 `init()`；损失逐比特下降。", "'逐比特' where the series writes 逐位")]:
        catalogue = translation.read_catalogue(path)
        catalogue.find(paragraph).msgstr = chinese
        translation.write_catalogue(catalogue, path)
        translation.generate(notebook)
        found = translation.check(notebook, [])
        assert len(found) == 1 and found[0].startswith(f"01_small.ipynb cell 1: {problem}"), found
        assert translation.main(["check", str(notebook)]) == 1, "`make zh` fails"
    catalogue = translation.read_catalogue(path)
    catalogue.find(paragraph).msgstr = "每个 rank 运行 `init()`；损失在节点下线之后逐比特下降。"
    catalogue.find(paragraph).tcomment = "allow: 下线"
    translation.write_catalogue(catalogue, path)
    translation.generate(notebook)
    assert [problem.split(" in the translation")[0] for problem in translation.check(notebook, [])] == [
        "01_small.ipynb cell 1: '逐比特' where the series writes 逐位"], "`# allow: 下线` lifts only 下线"
    catalogue.find(paragraph).msgstr = "每个 rank 运行 `init()`；损失下降。"
    translation.write_catalogue(catalogue, path)
    translation.generate(notebook)
    assert translation.check(notebook, []) == [] and translation.main(["check", str(notebook)]) == 0


def test_the_chinese_readme_has_no_forbidden_variant_italic_chinese_or_ascii_quotes():
    assert translation.readme_problems() == []


def test_code_spans_may_wrap_onto_the_next_line_or_hold_backticks():
    assert translation.must_keep("run `a\nb` and ``x `y` z``, see [it](a.md)") == ["`a\nb`", "``x `y` z``", "a.md"]


@pytest.mark.parametrize("english, chinese, problem", [
    ("## Summary\n- A step.", "## 小结\n- 一步。", None),
    ("## Summary\n- A step.", "## 总结\n- 一步。", "'## Summary' is '## 小结'"),
    ("| symptom | cause | fix |\n|---|---|---|", "| 现象 | 原因 | 解决办法 |\n|---|---|---|",
     "'| 现象 | 原因 | 解决方法 |'"),
    ("## Troubleshooting", "## 故障排除", "'## Troubleshooting' is '## 常见问题'"),
    ("## Next\nBack to the [series overview](../README.md).", "## 下一步\n返回[系列概览](../README.md)。",
     "the link back to the README is '[本系列概览](../README.md)'"),
    ("## Next\nBack to the [overview](../README.md).", "## 下一步\n返回[本系列概览](../README.md)。", None),
])
def test_the_templates_headings_are_written_one_way_in_every_notebook(english, chinese, problem):
    """01–16 write the template's fixed lines the same way (issue 53: 15 and 16 wrote 总结, 解决办法, 系列概览 and
    总览); every catalogue is held to it by test_every_paragraph_has_a_current_consistent_translation..."""
    found = translation.boilerplate_problems(english, chinese)
    assert (found == []) if problem is None else (len(found) == 1 and problem in found[0]), found


def test_the_names_page_catalogue_has_a_current_chinese_for_every_english_note():
    assert translation.check_stacks() == []
    notes = translation.stack_notes()
    assert len(notes) >= 40, "the notes and source lines of stacks.tsv that hold English words"
    assert "no flag: world size ÷ (TP × PP × CP); PyTorch `torch.nn.parallel.DistributedDataParallel`" in notes
    assert not any(text.startswith("MindSpeed master docs/") for text in notes), "a bare path needs no Chinese"
    chinese = translation.stacks_chinese()
    assert all(translation.english_words(text) == [] for text in chinese.values())


def test_english_words_finds_prose_but_not_code_paths_or_names():
    assert translation.english_words("PyTorch docs, ZeroRedundancyOptimizer (used with `torch.nn.DataParallel`)") == [
        "docs", "used", "with"]
    assert translation.english_words("Megatron-LM core_v0.15.0 megatron/training/arguments.py:385; "
                                     "`--cp-comm-type p2p`; MindSpeed master docs/zh/a-b.md") == []
    assert translation.english_words("总 rank 数 ÷（TP × PP × CP）；PyTorch 文档，Distributed Optimizers") == []


def test_an_edited_stacks_note_turns_fuzzy_and_is_listed_until_translated(tmp_path):
    stacks, catalogue = tmp_path / "stacks.tsv", tmp_path / "stacks.po"
    text = translation.STACKS.read_text(encoding="utf-8")
    stacks.write_text(text, encoding="utf-8")
    catalogue.write_bytes(translation.STACKS_CATALOGUE.read_bytes())
    assert translation.check_stacks(stacks, catalogue) == []
    note = "no flag: world size ÷ (TP × PP × CP); PyTorch `torch.nn.parallel.DistributedDataParallel`"
    stacks.write_text(text.replace(note, note.replace("no flag", "no flag at all")), encoding="utf-8")
    assert any("no entry" in p for p in translation.check_stacks(stacks, catalogue))
    with pytest.raises(ValueError, match="no flag at all.*has no entry.*run `make zh`"):
        translation.stacks_chinese(stacks, catalogue)
    translation.update_stacks(stacks, catalogue)
    entry = translation.read_catalogue(catalogue).find(note.replace("no flag", "no flag at all"))
    assert entry.fuzzy and entry.previous_msgid == note
    assert any("fuzzy" in p for p in translation.check_stacks(stacks, catalogue))
    for chinese, problem in [("no flag at all：总 rank 数 ÷（TP × PP × CP）；PyTorch 中为 "
                              "`torch.nn.parallel.DistributedDataParallel`", "English left in the translation: no, "
                              "flag, at, all"),
                             ("完全没有对应参数：总 rank 数 ÷（TP × PP × CP）", "lost '`torch.nn.parallel")]:
        po = translation.read_catalogue(catalogue)
        entry = po.find(note.replace("no flag", "no flag at all"))
        entry.msgstr, entry.flags = chinese, []
        translation.write_catalogue(po, catalogue)
        found = translation.check_stacks(stacks, catalogue)
        assert len(found) == 1 and problem in found[0], found
