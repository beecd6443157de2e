<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="ja_JP" sourcelanguage="en">
<context>
    <name>gputray</name>
    <message>
        <source>graphics</source>
        <translation>グラフィックス</translation>
    </message>
    <message>
        <source>compute</source>
        <translation>計算</translation>
    </message>
    <message>
        <source>rocm</source>
        <translation>ROCm</translation>
    </message>
    <message>
        <source>mixed</source>
        <translation>混在</translation>
    </message>
    <message>
        <source>other</source>
        <translation>その他</translation>
    </message>
    <message>
        <source>PID</source>
        <translation>PID</translation>
    </message>
    <message>
        <source>Process</source>
        <translation>プロセス</translation>
    </message>
    <message>
        <source>Device</source>
        <translation>デバイス</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>種類</translation>
    </message>
    <message>
        <source>Memory GiB</source>
        <translation>メモリ GiB</translation>
    </message>
    <message>
        <source>Util %</source>
        <translation>使用率 %</translation>
    </message>
    <message>
        <source>Environment</source>
        <translation>環境</translation>
    </message>
    <message>
        <source>Result</source>
        <translation>結果</translation>
    </message>
    <message>
        <source>Selected by</source>
        <translation>選択方法</translation>
    </message>
    <message>
        <source>Reason / fix</source>
        <translation>理由 / 対処</translation>
    </message>
    <message>
        <source>Figures</source>
        <translation>測定値</translation>
    </message>
    <message>
        <source>works</source>
        <translation>動作</translation>
    </message>
    <message>
        <source>limited</source>
        <translation>制限あり</translation>
    </message>
    <message>
        <source>fails</source>
        <translation>失敗</translation>
    </message>
    <message>
        <source>History</source>
        <translation>履歴</translation>
    </message>
    <message>
        <source>Processes</source>
        <translation>プロセス</translation>
    </message>
    <message>
        <source>Doctor</source>
        <translation>診断</translation>
    </message>
    <message>
        <source>Task logs</source>
        <translation>タスクログ</translation>
    </message>
    <message>
        <source>Utilisation %</source>
        <translation>使用率 %</translation>
    </message>
    <message>
        <source>Temperature °C</source>
        <translation>温度 °C</translation>
    </message>
    <message>
        <source>Power W</source>
        <translation>電力 W</translation>
    </message>
    <message>
        <source>VRAM GiB</source>
        <translation>VRAM GiB</translation>
    </message>
    <message>
        <source>Shared GiB</source>
        <translation>共有メモリ GiB</translation>
    </message>
    <message>
        <source>Cached results; run the doctor to probe again.</source>
        <translation>キャッシュされた結果です。再調査するには診断を実行してください。</translation>
    </message>
    <message>
        <source>minutes ago</source>
        <translation>分前</translation>
    </message>
    <message>
        <source>Run doctor</source>
        <translation>診断を実行</translation>
    </message>
    <message>
        <source>Right-click a process of yours to stop it</source>
        <translation>自分のプロセスを右クリックすると停止できます</translation>
    </message>
    <message>
        <source>Running the doctor…</source>
        <translation>診断を実行中…</translation>
    </message>
    <message>
        <source>dashboard</source>
        <translation>ダッシュボード</translation>
    </message>
    <message>
        <source>No doctor results yet: add a Python environment in Settings.</source>
        <translation>診断結果はまだありません。設定で Python 環境を追加してください。</translation>
    </message>
    <message>
        <source>DEMO</source>
        <translation>デモ</translation>
    </message>
    <message>
        <source>#{id} {name} has not started yet.</source>
        <translation>#{id} {name} はまだ開始していません。</translation>
    </message>
    <message>
        <source>State: {state}</source>
        <translation>状態: {state}</translation>
    </message>
    <message>
        <source>Doctor results could not be read: {error}</source>
        <translation>診断結果を読めませんでした: {error}</translation>
    </message>
    <message>
        <source>Doctor finished at {time}</source>
        <translation>診断完了 {time}</translation>
    </message>
    <message>
        <source>Why: {reason}</source>
        <translation>理由: {reason}</translation>
    </message>
    <message>
        <source>Cannot read {path}: {error}</source>
        <translation>{path} を読めません: {error}</translation>
    </message>
    <message>
        <source>The doctor failed: {error}</source>
        <translation>診断に失敗しました: {error}</translation>
    </message>
    <message>
        <source>Drop files here to queue them</source>
        <translation>ここにファイルをドロップしてキューに追加</translation>
    </message>
    <message>
        <source>drop</source>
        <translation>ドロップ</translation>
    </message>
    <message>
        <source>Keep on top</source>
        <translation>常に手前に表示</translation>
    </message>
    <message>
        <source>Hide the bubble</source>
        <translation>バブルを隠す</translation>
    </message>
    <message>
        <source>drop files</source>
        <translation>ファイルをドロップ</translation>
    </message>
    <message>
        <source>As the recipe says</source>
        <translation>レシピの指定どおり</translation>
    </message>
    <message>
        <source>Fastest free GPU (redirect when busy)</source>
        <translation>空いている GPU (使用中なら振り替え)</translation>
    </message>
    <message>
        <source>Discrete GPU only (wait for it)</source>
        <translation>ディスクリート GPU のみ (空くまで待つ)</translation>
    </message>
    <message>
        <source>Integrated GPU only (wait for it)</source>
        <translation>内蔵 GPU のみ (空くまで待つ)</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>Queue dropped files</source>
        <translation>ドロップしたファイルをキューに追加</translation>
    </message>
    <message>
        <source>Queue</source>
        <translation>キュー</translation>
    </message>
    <message>
        <source>Files</source>
        <translation>ファイル</translation>
    </message>
    <message>
        <source>Recipe</source>
        <translation>レシピ</translation>
    </message>
    <message>
        <source>{n} file(s) will become {n} job(s).</source>
        <translation>{n} 個のファイルから {n} 個のジョブを作ります。</translation>
    </message>
    <message>
        <source>Not queued:</source>
        <translation>キューに追加されないもの:</translation>
    </message>
    <message>
        <source>{item}: only local files can be queued</source>
        <translation>{item}: キューに追加できるのはローカルファイルだけです</translation>
    </message>
    <message>
        <source>{name} is a folder: drop the files inside it instead</source>
        <translation>{name} はフォルダです。中のファイルをドロップしてください</translation>
    </message>
    <message>
        <source>{path} does not exist</source>
        <translation>{path} は存在しません</translation>
    </message>
    <message>
        <source>{name}: no recipe handles {type} files</source>
        <translation>{name}: {type} ファイルを扱うレシピがありません</translation>
    </message>
    <message>
        <source>{tool} is not installed (or not on PATH), so these files cannot be queued.</source>
        <translation>{tool} がインストールされていない(または PATH にない)ため、これらのファイルはキューに追加できません。</translation>
    </message>
    <message>
        <source>Remember for {type} files</source>
        <translation>{type} ファイルではこの設定を記憶</translation>
    </message>
    <message>
        <source>{n} of the {total} dropped item(s) will not be queued (see below).</source>
        <translation>ドロップした {total} 件のうち {n} 件はキューに追加されません(下記参照)。</translation>
    </message>
    <message>
        <source>Get it: {hint}</source>
        <translation>入手先: {hint}</translation>
    </message>
    <message>
        <source>green</source>
        <translation>緑</translation>
    </message>
    <message>
        <source>light green</source>
        <translation>薄緑</translation>
    </message>
    <message>
        <source>dark green</source>
        <translation>深緑</translation>
    </message>
    <message>
        <source>red</source>
        <translation>赤</translation>
    </message>
    <message>
        <source>pink</source>
        <translation>ピンク</translation>
    </message>
    <message>
        <source>dark red</source>
        <translation>暗赤</translation>
    </message>
    <message>
        <source>blue</source>
        <translation>青</translation>
    </message>
    <message>
        <source>light blue</source>
        <translation>水色</translation>
    </message>
    <message>
        <source>dark blue</source>
        <translation>紺</translation>
    </message>
    <message>
        <source>grey</source>
        <translation>灰</translation>
    </message>
    <message>
        <source>light grey</source>
        <translation>薄灰</translation>
    </message>
    <message>
        <source>dark grey</source>
        <translation>濃灰</translation>
    </message>
    <message>
        <source>{color}: {name}</source>
        <translation>{color}: {name}</translation>
    </message>
    <message>
        <source>Show panel</source>
        <translation>パネルを表示</translation>
    </message>
    <message>
        <source>Open dashboard</source>
        <translation>ダッシュボードを開く</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>設定…</translation>
    </message>
    <message>
        <source>Demo mode</source>
        <translation>デモモード</translation>
    </message>
    <message>
        <source>Drop bubble</source>
        <translation>ドロップバブル</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>終了</translation>
    </message>
    <message>
        <source>Resume queue</source>
        <translation>キューを再開</translation>
    </message>
    <message>
        <source>Pause queue</source>
        <translation>キューを一時停止</translation>
    </message>
    <message>
        <source>{name} is hot: {temp} °C (limit {limit} °C)</source>
        <translation>{name} が高温: {temp} °C(上限 {limit} °C)</translation>
    </message>
    <message>
        <source>{name} is hot: {temp} °C (limit {limit})</source>
        <translation>{name} が高温: {temp} °C(上限 {limit})</translation>
    </message>
    <message>
        <source>{name} is lost: {why}</source>
        <translation>{name} が失われました: {why}</translation>
    </message>
    <message>
        <source>{name} was lost: {why}</source>
        <translation>{name} が失われました: {why}</translation>
    </message>
    <message>
        <source>{name} unavailable: {why}</source>
        <translation>{name} は利用できません: {why}</translation>
    </message>
    <message>
        <source>{name} uses {size}, {util} %</source>
        <translation>{name} が {size}・{util} % を使用中</translation>
    </message>
    <message>
        <source>in use by another program: {util} % for ≥ {secs} s</source>
        <translation>他のプログラムが使用中: {secs} 秒以上 {util} %</translation>
    </message>
    <message>
        <source>{name} holds {size} and is active</source>
        <translation>{name} が {size} を確保して動作中</translation>
    </message>
    <message>
        <source>{name} cooled to {temp} °C</source>
        <translation>{name} は {temp} °C まで下がりました</translation>
    </message>
    <message>
        <source>{name} went to sleep</source>
        <translation>{name} がスリープしました</translation>
    </message>
    <message>
        <source>{name} woke up</source>
        <translation>{name} がスリープから復帰しました</translation>
    </message>
    <message>
        <source>{name} disappeared</source>
        <translation>{name} が見えなくなりました</translation>
    </message>
    <message>
        <source>{name} appeared</source>
        <translation>{name} が現れました</translation>
    </message>
    <message>
        <source>{why}; retry {n} of {total} in {secs} s</source>
        <translation>{why}。{secs} 秒後に再試行 ({n}/{total})</translation>
    </message>
    <message>
        <source>{why}; retrying ({left} left)</source>
        <translation>{why}。再試行します(残り {left} 回)</translation>
    </message>
    <message>
        <source>fastest: {why}</source>
        <translation>最速: {why}</translation>
    </message>
    <message>
        <source>greenest: {why}</source>
        <translation>省エネ: {why}</translation>
    </message>
    <message>
        <source>{why}: running there</source>
        <translation>{why}: そこで実行します</translation>
    </message>
    <message>
        <source>{why}: waiting for it</source>
        <translation>{why}: 空くのを待ちます</translation>
    </message>
    <message>
        <source>no earlier run of this job to estimate from</source>
        <translation>このジョブの過去の実行がなく見積もれません</translation>
    </message>
    <message>
        <source>{why}, past {factor}× the fastest finish</source>
        <translation>{why}（最速の {factor} 倍を超える）</translation>
    </message>
    <message>
        <source>{name} frees in {wait}, finishes in {finish}, {kj} kJ</source>
        <translation>{name} は {wait} 後に空き、{finish} 後に完了、{kj} kJ</translation>
    </message>
    <message>
        <source>{name} frees in {wait}, finishes in {finish}</source>
        <translation>{name} は {wait} 後に空き、{finish} 後に完了</translation>
    </message>
    <message>
        <source>{name} finishes in {run}, {kj} kJ</source>
        <translation>{name} なら {run} で完了、{kj} kJ</translation>
    </message>
    <message>
        <source>{name} finishes in {run}</source>
        <translation>{name} なら {run} で完了</translation>
    </message>
    <message>
        <source>{name} busy, free time unknown</source>
        <translation>{name} は使用中、空く時刻は不明</translation>
    </message>
    <message>
        <source>{task} has waited {waited}: {name} is free and would run it in {run}</source>
        <translation>{task} は {waited} 待機中: {name} が空いていて {run} で実行できます</translation>
    </message>
    <message>
        <source>waiting for a free device: {detail}</source>
        <translation>空いているデバイスを待機中: {detail}</translation>
    </message>
    <message>
        <source>gave up after waiting {duration} for {label}: {why}</source>
        <translation>{label} を {duration} 待って断念: {why}</translation>
    </message>
    <message>
        <source>waiting for {label}: {why}</source>
        <translation>{label} を待機中: {why}</translation>
    </message>
    <message>
        <source>no device can run it: {reasons}</source>
        <translation>実行できるデバイスがありません: {reasons}</translation>
    </message>
    <message>
        <source>redirected to {target} after waiting {duration}: {state}</source>
        <translation>{duration} 待った後 {target} に振り替え: {state}</translation>
    </message>
    <message>
        <source>redirected to {target}: {state}</source>
        <translation>{target} に振り替え: {state}</translation>
    </message>
    <message>
        <source>on CPU after waiting {duration}: {state}</source>
        <translation>{duration} 待った後 CPU で実行: {state}</translation>
    </message>
    <message>
        <source>on CPU: {state}</source>
        <translation>CPU で実行: {state}</translation>
    </message>
    <message>
        <source>{label} busy ({why})</source>
        <translation>{label} は使用中({why})</translation>
    </message>
    <message>
        <source>{label} cannot run it ({why})</source>
        <translation>{label} では実行できません({why})</translation>
    </message>
    <message>
        <source>{label} not present</source>
        <translation>{label} が見つかりません</translation>
    </message>
    <message>
        <source>held for task #{id}, which waited longest</source>
        <translation>最も長く待っているタスク #{id} のために確保中</translation>
    </message>
    <message>
        <source>running {name}</source>
        <translation>{name} を実行中</translation>
    </message>
    <message>
        <source>needs {need}, {name} has {total}</source>
        <translation>{need} 必要ですが {name} は {total} です</translation>
    </message>
    <message>
        <source>needs {need}, {free} {where} free</source>
        <translation>{need} 必要ですが {where} の空きは {free} です</translation>
    </message>
    <message>
        <source>{name} lacks {what} (per the doctor)</source>
        <translation>{name} は {what} に対応していません(診断による)</translation>
    </message>
    <message>
        <source>hot: {temp} °C (limit {limit} °C)</source>
        <translation>高温: {temp} °C(上限 {limit} °C)</translation>
    </message>
    <message>
        <source>lost: {why}</source>
        <translation>失われました: {why}</translation>
    </message>
    <message>
        <source>unavailable: {why}</source>
        <translation>利用できません: {why}</translation>
    </message>
    <message>
        <source>retry in {duration}</source>
        <translation>{duration} 後に再試行</translation>
    </message>
    <message>
        <source>starts at {when}</source>
        <translation>{when} に開始</translation>
    </message>
    <message>
        <source>waits for its window {window}</source>
        <translation>実行時間帯 {window} を待機中</translation>
    </message>
    <message>
        <source>env lookup failed ({error})</source>
        <translation>環境の検索に失敗しました({error})</translation>
    </message>
    <message>
        <source>no Python env is known to work on {where}: using gputray's own Python ({python})</source>
        <translation>{where} で動作する Python 環境がありません。gputray 自身の Python を使います({python})</translation>
    </message>
    <message>
        <source>interrupted: {name} was lost while it ran</source>
        <translation>中断: 実行中に {name} が失われました</translation>
    </message>
    <message>
        <source>interrupted: gputray stopped while it ran</source>
        <translation>中断: 実行中に gputray が終了しました</translation>
    </message>
    <message>
        <source>timed out after {secs} s</source>
        <translation>{secs} 秒でタイムアウト</translation>
    </message>
    <message>
        <source>killed by signal {signal}</source>
        <translation>シグナル {signal} で強制終了</translation>
    </message>
    <message>
        <source>exited with status {code}</source>
        <translation>終了コード {code} で終了</translation>
    </message>
    <message>
        <source>{name} queued again as #{id}</source>
        <translation>{name} を #{id} として再びキューに追加しました</translation>
    </message>
    <message>
        <source>{name} could not start: {error}</source>
        <translation>{name} を開始できませんでした: {error}</translation>
    </message>
    <message>
        <source>could not start: {error}</source>
        <translation>開始できませんでした: {error}</translation>
    </message>
    <message>
        <source>{name} started on {where}</source>
        <translation>{name} を {where} で開始しました</translation>
    </message>
    <message>
        <source>{name} finished on {where}</source>
        <translation>{name} が {where} で完了しました</translation>
    </message>
    <message>
        <source>task #{id} already {state}; nothing to cancel</source>
        <translation>タスク #{id} はすでに{state}です。キャンセルするものはありません</translation>
    </message>
    <message>
        <source>task #{id} changed state meanwhile; try again</source>
        <translation>タスク #{id} の状態が途中で変わりました。もう一度お試しください</translation>
    </message>
    <message>
        <source>task #{id} is {state}; only queued or waiting tasks move</source>
        <translation>タスク #{id} は{state}です。移動できるのは待機中のタスクだけです</translation>
    </message>
    <message>
        <source>task #{id} is {state}; retry is for finished tasks</source>
        <translation>タスク #{id} は{state}です。再試行は終わったタスクにだけ使えます</translation>
    </message>
    <message>
        <source>dependency {dep} failed: {why}</source>
        <translation>依存先 {dep} が失敗しました: {why}</translation>
    </message>
    <message>
        <source>dependency {dep} cancelled: {why}</source>
        <translation>依存先 {dep} がキャンセルされました: {why}</translation>
    </message>
    <message>
        <source>because of its own {why}</source>
        <translation>その依存先のため: {why}</translation>
    </message>
    <message>
        <source>waits for {deps} to succeed</source>
        <translation>{deps} の成功を待機中</translation>
    </message>
    <message>
        <source>waits for {deps} to end</source>
        <translation>{deps} の終了を待機中</translation>
    </message>
    <message>
        <source>queued again: #{id} was queued again</source>
        <translation>再びキューへ: #{id} が再びキューに入りました</translation>
    </message>
    <message>
        <source>task #{id} cannot move next to itself</source>
        <translation>タスク #{id} は自分自身の隣には移動できません</translation>
    </message>
    <message>
        <source>task #{id} is {state}; tasks move among queued or waiting ones</source>
        <translation>タスク #{id} は{state}です。移動できるのはキュー内または待機中のタスクの間だけです</translation>
    </message>
    <message>
        <source>works, but {names} failed: {why}</source>
        <translation>動作しますが {names} は失敗: {why}</translation>
    </message>
    <message>
        <source>a real op and every bench item passed</source>
        <translation>実際の演算とすべてのベンチ項目に成功</translation>
    </message>
    <message>
        <source>a real op ran (not benchmarked)</source>
        <translation>実際の演算が動作(ベンチマークは未実施)</translation>
    </message>
    <message>
        <source>the basic op did not run</source>
        <translation>基本演算が動きませんでした</translation>
    </message>
    <message>
        <source>this env has a CUDA build of torch (CUDA {cuda}); it cannot use AMD GPUs</source>
        <translation>この環境の torch は CUDA 版(CUDA {cuda})です。AMD の GPU は使えません</translation>
    </message>
    <message>
        <source>this env has a ROCm build of torch (HIP {hip}); it cannot use NVIDIA GPUs</source>
        <translation>この環境の torch は ROCm 版(HIP {hip})です。NVIDIA の GPU は使えません</translation>
    </message>
    <message>
        <source>use an env with a cu128+ CUDA build for this GPU: {command}</source>
        <translation>この GPU には cu128 以上の CUDA 版を入れた環境を使ってください: {command}</translation>
    </message>
    <message>
        <source>use an env with {hint} for this GPU</source>
        <translation>この GPU には {hint} を入れた環境を使ってください</translation>
    </message>
    <message>
        <source>torch in this env does not see this GPU</source>
        <translation>この環境の torch からこの GPU が見えません</translation>
    </message>
    <message>
        <source>check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES in this env's settings</source>
        <translation>この環境の設定の CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES を確認してください</translation>
    </message>
    <message>
        <source>the probe hung {where} and was stopped after {secs} s</source>
        <translation>検査が{where}止まったため {secs} 秒で中止しました</translation>
    </message>
    <message>
        <source>on this device</source>
        <translation>このデバイスで</translation>
    </message>
    <message>
        <source>before it reached any device</source>
        <translation>デバイスに届く前に</translation>
    </message>
    <message>
        <source>remove or change HSA_OVERRIDE_GFX_VERSION={value} for this env</source>
        <translation>この環境の HSA_OVERRIDE_GFX_VERSION={value} を外すか変えてください</translation>
    </message>
    <message>
        <source>run gputray doctor --refresh once the GPU is idle, or allow more time with --timeout (a first CUDA run can spend minutes compiling kernels)</source>
        <translation>GPU が空いてから gputray doctor --refresh を実行するか、--timeout で時間を延ばしてください(初回の CUDA 実行はカーネルのコンパイルに数分かかることがあります)</translation>
    </message>
    <message>
        <source>the interpreter {python} does not exist any more</source>
        <translation>インタープリター {python} はもうありません</translation>
    </message>
    <message>
        <source>gputray envs remove {name}, then add the right path</source>
        <translation>gputray envs remove {name} の後、正しいパスを追加してください</translation>
    </message>
    <message>
        <source>gputray envs remove {name}, then add a real Python</source>
        <translation>gputray envs remove {name} の後、本物の Python を追加してください</translation>
    </message>
    <message>
        <source>check that {python} is a Python interpreter</source>
        <translation>{python} が Python インタープリターか確認してください</translation>
    </message>
    <message>
        <source>{what}: this ROCm build of torch has no kernels for {arch}, even with HSA_OVERRIDE_GFX_VERSION={value}</source>
        <translation>{what}: この ROCm 版 torch には HSA_OVERRIDE_GFX_VERSION={value} でも {arch} 用のカーネルがありません</translation>
    </message>
    <message>
        <source>{what}: this ROCm build of torch has no kernels for {arch}</source>
        <translation>{what}: この ROCm 版 torch には {arch} 用のカーネルがありません</translation>
    </message>
    <message>
        <source>install a ROCm build of torch whose arch list has {arch}, or try another override value</source>
        <translation>{arch} を対象に含む ROCm 版 torch を入れるか、別の上書き値を試してください</translation>
    </message>
    <message>
        <source>install {hint} that supports {arch}</source>
        <translation>{arch} に対応した{hint}を入れてください</translation>
    </message>
    <message>
        <source>install {hint} in this env</source>
        <translation>この環境に{hint}を入れてください</translation>
    </message>
    <message>
        <source>a ROCm build of torch (index URL on {url})</source>
        <translation>ROCm 版 torch(インデックス URL は {url})</translation>
    </message>
    <message>
        <source>try HSA_OVERRIDE_GFX_VERSION={value} for this env only: {command}</source>
        <translation>この環境だけに HSA_OVERRIDE_GFX_VERSION={value} を試してください: {command}</translation>
    </message>
    <message>
        <source>this torch build has no kernels for {target} (RTX 50-series / Blackwell needs CUDA 12.8+)</source>
        <translation>この torch には {target} 用のカーネルがありません(RTX 50 シリーズ / Blackwell には CUDA 12.8 以上が必要)</translation>
    </message>
    <message>
        <source>this torch build has no kernels for {target}</source>
        <translation>この torch には {target} 用のカーネルがありません</translation>
    </message>
    <message>
        <source>install a cu128+ wheel in this env: {command}</source>
        <translation>この環境に cu128 以上の wheel を入れてください: {command}</translation>
    </message>
    <message>
        <source>the ROCm runtime rejected the GPU code (invalid ISA) with HSA_OVERRIDE_GFX_VERSION={value}: that value does not fit this GPU</source>
        <translation>HSA_OVERRIDE_GFX_VERSION={value} で ROCm ランタイムが GPU コードを拒否しました(不正な ISA): この値はこの GPU に合いません</translation>
    </message>
    <message>
        <source>use HSA_OVERRIDE_GFX_VERSION=11.0.0 for a gfx1103 (Radeon 780M), or remove the override</source>
        <translation>gfx1103(Radeon 780M)には HSA_OVERRIDE_GFX_VERSION=11.0.0 を使うか、上書きを外してください</translation>
    </message>
    <message>
        <source>the ROCm runtime rejected the GPU code (invalid ISA)</source>
        <translation>ROCm ランタイムが GPU コードを拒否しました(不正な ISA)</translation>
    </message>
    <message>
        <source>HIP error: invalid device function</source>
        <translation>HIP エラー(不正なデバイス関数)</translation>
    </message>
    <message>
        <source>no GPU code for this GPU in the ROCm libraries</source>
        <translation>ROCm ライブラリにこの GPU 用のコードがありません</translation>
    </message>
    <message>
        <source>the NVIDIA driver is too old for this torch build CUDA {cuda} (it supports CUDA {supported})</source>
        <translation>NVIDIA ドライバーがこの torch(CUDA {cuda})には古すぎます(対応は CUDA {supported} まで)</translation>
    </message>
    <message>
        <source>the NVIDIA driver is too old for this torch build CUDA {cuda}</source>
        <translation>NVIDIA ドライバーがこの torch(CUDA {cuda})には古すぎます</translation>
    </message>
    <message>
        <source>the NVIDIA driver is too old for this torch build (it supports CUDA {supported})</source>
        <translation>NVIDIA ドライバーがこの torch には古すぎます(対応は CUDA {supported} まで)</translation>
    </message>
    <message>
        <source>the NVIDIA driver is too old for this torch build</source>
        <translation>NVIDIA ドライバーがこの torch には古すぎます</translation>
    </message>
    <message>
        <source>update the NVIDIA driver (570 or newer for CUDA 12.8 and RTX 50-series), or use a torch build for an older CUDA on older GPUs</source>
        <translation>NVIDIA ドライバーを更新するか(CUDA 12.8 と RTX 50 シリーズには 570 以降)、古い GPU では古い CUDA 向けの torch を使ってください</translation>
    </message>
    <message>
        <source>no NVIDIA driver is loaded</source>
        <translation>NVIDIA ドライバーが読み込まれていません</translation>
    </message>
    <message>
        <source>install the NVIDIA driver (570+ for RTX 50-series)</source>
        <translation>NVIDIA ドライバーを入れてください(RTX 50 シリーズには 570 以降)</translation>
    </message>
    <message>
        <source>this env has a CPU-only build of torch</source>
        <translation>この環境の torch は CPU 専用版です</translation>
    </message>
    <message>
        <source>torch is not installed in this env</source>
        <translation>この環境には torch が入っていません</translation>
    </message>
    <message>
        <source>{python} -m pip install torch (a cu128 build for NVIDIA, a ROCm build for AMD)</source>
        <translation>{python} -m pip install torch(NVIDIA には cu128 版、AMD には ROCm 版)</translation>
    </message>
    <message>
        <source>the GPU ran out of memory during the test</source>
        <translation>検査中に GPU のメモリーが足りなくなりました</translation>
    </message>
    <message>
        <source>close what holds the GPU memory, then run gputray doctor --refresh</source>
        <translation>GPU メモリーを使っているものを閉じてから gputray doctor --refresh を実行してください</translation>
    </message>
    <message>
        <source>the device computed wrong results</source>
        <translation>デバイスの計算結果が間違っていました</translation>
    </message>
    <message>
        <source>remove HSA_OVERRIDE_GFX_VERSION={value} from this env</source>
        <translation>この環境から HSA_OVERRIDE_GFX_VERSION={value} を外してください</translation>
    </message>
    <message>
        <source>torch in this env is broken: {lib} is missing</source>
        <translation>この環境の torch は壊れています: {lib} がありません</translation>
    </message>
    <message>
        <source>reinstall torch: {command}</source>
        <translation>torch を入れ直してください: {command}</translation>
    </message>
    <message>
        <source>this GPU</source>
        <translation>この GPU</translation>
    </message>
    <message>
        <source>the gputray owner is still starting; try again</source>
        <translation>gputray のキュー管理がまだ起動中です。もう一度お試しください</translation>
    </message>
    <message>
        <source>the gputray owner is stopping</source>
        <translation>gputray のキュー管理は終了処理中です</translation>
    </message>
    <message>
        <source>no such file: {files}</source>
        <translation>ファイルがありません: {files}</translation>
    </message>
    <message>
        <source>the queue is paused</source>
        <translation>キューは一時停止中です</translation>
    </message>
    <message>
        <source>queued again by request</source>
        <translation>要求によりキューに再追加</translation>
    </message>
    <message>
        <source>cancelled while running</source>
        <translation>実行中にキャンセル</translation>
    </message>
    <message>
        <source>all its job slots are taken</source>
        <translation>ジョブの枠がすべて使用中</translation>
    </message>
    <message>
        <source>not present</source>
        <translation>見つかりません</translation>
    </message>
    <message>
        <source>{name} is asleep</source>
        <translation>{name} はスリープ中</translation>
    </message>
    <message>
        <source>{name} is back</source>
        <translation>{name} が復帰しました</translation>
    </message>
    <message>
        <source>{name} cancelled</source>
        <translation>{name} をキャンセルしました</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>キャンセル済み</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>一時停止中</translation>
    </message>
    <message>
        <source>busy</source>
        <translation>使用中</translation>
    </message>
    <message>
        <source>lost</source>
        <translation>消失</translation>
    </message>
    <message>
        <source>asleep</source>
        <translation>スリープ中</translation>
    </message>
    <message>
        <source>unavailable</source>
        <translation>利用不可</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>キュー待ち</translation>
    </message>
    <message>
        <source>waiting</source>
        <translation>待機中</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>起動中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>実行中</translation>
    </message>
    <message>
        <source>succeeded</source>
        <translation>成功</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失敗</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>中断</translation>
    </message>
    <message>
        <source>{h} h {m} min</source>
        <translation>{h} 時間 {m} 分</translation>
    </message>
    <message>
        <source>{m} min</source>
        <translation>{m} 分</translation>
    </message>
    <message>
        <source>{s} s</source>
        <translation>{s} 秒</translation>
    </message>
    <message>
        <source>Job started</source>
        <translation>ジョブ開始</translation>
    </message>
    <message>
        <source>Job redirected to another GPU</source>
        <translation>ジョブを別の GPU に振り替え</translation>
    </message>
    <message>
        <source>Job finished</source>
        <translation>ジョブ完了</translation>
    </message>
    <message>
        <source>Job failed</source>
        <translation>ジョブ失敗</translation>
    </message>
    <message>
        <source>Waiting for {waited}; it takes about {run} on {device}.</source>
        <translation>{waited} 待っています。{device} なら約 {run} で終わります。</translation>
    </message>
    <message>
        <source>{name} can start now on {device}</source>
        <translation>{name} は {device} ですぐ開始できます</translation>
    </message>
    <message>
        <source>{n} s</source>
        <translation>{n} 秒</translation>
    </message>
    <message>
        <source>{n} min</source>
        <translation>{n} 分</translation>
    </message>
    <message>
        <source>{h} h {m:02d} min</source>
        <translation>{h} 時間 {m:02d} 分</translation>
    </message>
    <message>
        <source>Run on {device} now</source>
        <translation>今すぐ {device} で実行</translation>
    </message>
    <message>
        <source>Keep waiting</source>
        <translation>このまま待つ</translation>
    </message>
    <message>
        <source>Residents</source>
        <translation>常駐サーバー</translation>
    </message>
    <message>
        <source>gputray's jobs here are paused</source>
        <translation>gputray のジョブはここで一時停止中</translation>
    </message>
    <message>
        <source>An idle GPU server could free memory for a job</source>
        <translation>アイドルの GPU サーバーがジョブのためにメモリを解放できるとき</translation>
    </message>
    <message>
        <source>A game or exclusive app took a GPU, or gave it back</source>
        <translation>ゲームなど専有アプリが GPU を使い始めたとき、終えたとき</translation>
    </message>
    <message>
        <source>serving</source>
        <translation>応答中</translation>
    </message>
    <message>
        <source>idle {duration}</source>
        <translation>アイドル {duration}</translation>
    </message>
    <message>
        <source>holds {memory}</source>
        <translation>{memory} を確保</translation>
    </message>
    <message>
        <source>{name} {figures}</source>
        <translation>{name}: {figures}</translation>
    </message>
    <message>
        <source>its API does not answer</source>
        <translation>API が応答しません</translation>
    </message>
    <message>
        <source>Free {resident}'s {memory} and run {name}</source>
        <translation>{resident} の {memory} を解放して {name} を実行</translation>
    </message>
    <message>
        <source>{name} waits for {device}</source>
        <translation>{name} は {device} を待っています</translation>
    </message>
    <message>
        <source>{resident} holds {memory} there and is {idle}. Free it? It is asked through its own API.</source>
        <translation>{resident} がそこで {memory} を確保しています（{idle}）。解放しますか？ {resident} 自身の API を通して依頼します。</translation>
    </message>
    <message>
        <source>taken by {app}</source>
        <translation>{app} が使用中</translation>
    </message>
    <message>
        <source>{app} took {device}</source>
        <translation>{app} が {device} を使い始めました</translation>
    </message>
    <message>
        <source>gputray paused its jobs on {device} and starts none there until {app} exits.</source>
        <translation>gputray は {device} のジョブを一時停止し、{app} が終了するまでそこでは何も開始しません。</translation>
    </message>
    <message>
        <source>{device} is free again</source>
        <translation>{device} が空きました</translation>
    </message>
    <message>
        <source>{app} has exited: gputray's jobs on {device} go on.</source>
        <translation>{app} が終了しました。{device} の gputray のジョブを再開します。</translation>
    </message>
    <message>
        <source>{name} on {device}</source>
        <translation>{device} の {name}</translation>
    </message>
    <message>
        <source>models: {models}</source>
        <translation>モデル: {models}</translation>
    </message>
    <message>
        <source>port {port}</source>
        <translation>ポート {port}</translation>
    </message>
    <message>
        <source>Resident</source>
        <translation>常駐サーバー</translation>
    </message>
    <message>
        <source>Holds</source>
        <translation>確保</translation>
    </message>
    <message>
        <source>Idle</source>
        <translation>アイドル</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>モデル</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>ポート</translation>
    </message>
    <message>
        <source>GPU servers running here; an idle one may free its memory for a waiting job</source>
        <translation>このマシンで動いている GPU サーバー。アイドルのものは待っているジョブのためにメモリを解放できます</translation>
    </message>
    <message>
        <source>Job could run on another GPU now</source>
        <translation>別の GPU ですぐ実行できるジョブ</translation>
    </message>
    <message>
        <source>GPU over temperature</source>
        <translation>GPU 温度超過</translation>
    </message>
    <message>
        <source>GPU lost</source>
        <translation>GPU 消失</translation>
    </message>
    <message>
        <source>GPU back</source>
        <translation>GPU 復帰</translation>
    </message>
    <message>
        <source>Started: {name}</source>
        <translation>開始: {name}</translation>
    </message>
    <message>
        <source>Redirected: {name}</source>
        <translation>振り替え: {name}</translation>
    </message>
    <message>
        <source>Finished: {name}</source>
        <translation>完了: {name}</translation>
    </message>
    <message>
        <source>Failed: {name}</source>
        <translation>失敗: {name}</translation>
    </message>
    <message>
        <source>{name} is hot</source>
        <translation>{name} が高温です</translation>
    </message>
    <message>
        <source>{name} lost</source>
        <translation>{name} が見えなくなりました</translation>
    </message>
    <message>
        <source>asleep (not woken to read it)</source>
        <translation>スリープ中 (読み取りのために起こしません)</translation>
    </message>
    <message>
        <source>no processes</source>
        <translation>プロセスなし</translation>
    </message>
    <message>
        <source>VRAM {memory}</source>
        <translation>VRAM {memory}</translation>
    </message>
    <message>
        <source>shared {memory}</source>
        <translation>共有 {memory}</translation>
    </message>
    <message>
        <source>Pause or resume the queue on this device</source>
        <translation>このデバイスのキューを一時停止/再開</translation>
    </message>
    <message>
        <source>Right-click to stop a process of yours</source>
        <translation>右クリックで自分のプロセスを停止できます</translation>
    </message>
    <message>
        <source>Dashboard</source>
        <translation>ダッシュボード</translation>
    </message>
    <message>
        <source>History, processes, the doctor and task logs</source>
        <translation>履歴、プロセス、診断、タスクのログ</translation>
    </message>
    <message>
        <source>Pin</source>
        <translation>固定</translation>
    </message>
    <message>
        <source>Keep the panel open when it loses focus</source>
        <translation>フォーカスを失ってもパネルを開いたままにする</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>キャンセル</translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>再試行</translation>
    </message>
    <message>
        <source>Move up</source>
        <translation>上へ</translation>
    </message>
    <message>
        <source>Move down</source>
        <translation>下へ</translation>
    </message>
    <message>
        <source>Open log</source>
        <translation>ログを開く</translation>
    </message>
    <message>
        <source>Priority</source>
        <translation>優先順位</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>一時停止</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>再開</translation>
    </message>
    <message>
        <source>simulated</source>
        <translation>シミュレーション</translation>
    </message>
    <message>
        <source>not in use by other programs</source>
        <translation>他のプログラムは使用していません</translation>
    </message>
    <message>
        <source>other programs hold memory here, computing little</source>
        <translation>他のプログラムがメモリを確保中（計算はわずか）</translation>
    </message>
    <message>
        <source>Stop {name} ({pid})…</source>
        <translation>{name} ({pid}) を停止…</translation>
    </message>
    <message>
        <source>Pinned: the panel stays open while you drag files here.</source>
        <translation>固定中: ファイルをドラッグする間もパネルは開いたままです。</translation>
    </message>
    <message>
        <source>Dragging from another window? Pin the panel first (Pin, top right).</source>
        <translation>別のウィンドウからドラッグする前に、右上の「固定」を押してください。</translation>
    </message>
    <message>
        <source>Looking for GPUs…</source>
        <translation>GPU を探しています…</translation>
    </message>
    <message>
        <source>No GPU found.</source>
        <translation>GPU が見つかりません。</translation>
    </message>
    <message>
        <source>CPU {cpu}  ·  RAM {ram}</source>
        <translation>CPU {cpu}  ·  RAM {ram}</translation>
    </message>
    <message>
        <source>jobs {running}/{slots}</source>
        <translation>ジョブ {running}/{slots}</translation>
    </message>
    <message>
        <source>Jobs running / slots (config: [devices.&lt;name&gt;] slots = N)</source>
        <translation>実行中のジョブ / スロット数（設定: [devices.&lt;name&gt;] slots = N）</translation>
    </message>
    <message>
        <source>this machine</source>
        <translation>このマシン</translation>
    </message>
    <message>
        <source>this machine, not connected to the cluster</source>
        <translation>このマシン（クラスタに未接続）</translation>
    </message>
    <message>
        <source>offline</source>
        <translation>オフライン</translation>
    </message>
    <message>
        <source>offline since {time}</source>
        <translation>{time} からオフライン</translation>
    </message>
    <message>
        <source>our jobs here: {names}</source>
        <translation>ここで実行中のジョブ: {names}</translation>
    </message>
    <message>
        <source>the queue is paused on this GPU</source>
        <translation>この GPU ではキューが一時停止中</translation>
    </message>
    <message>
        <source>Run on:</source>
        <translation>実行するマシン:</translation>
    </message>
    <message>
        <source>any machine</source>
        <translation>どのマシンでも</translation>
    </message>
    <message>
        <source>Any machine: the first free GPU that fits, on any machine of the cluster (this one too)</source>
        <translation>どのマシンでも: クラスタ内のどのマシン（このマシンも含む）でも、条件に合う最初の空き GPU で実行します</translation>
    </message>
    <message>
        <source>First in the queue</source>
        <translation>キューの先頭へ</translation>
    </message>
    <message>
        <source>Up one</source>
        <translation>一つ上へ</translation>
    </message>
    <message>
        <source>Down one</source>
        <translation>一つ下へ</translation>
    </message>
    <message>
        <source>Last in the queue</source>
        <translation>キューの最後へ</translation>
    </message>
    <message>
        <source>+{n} more</source>
        <translation>ほか {n} 件</translation>
    </message>
    <message>
        <source>Queue: {running} running, {waiting} waiting</source>
        <translation>キュー: 実行中 {running}、待機中 {waiting}</translation>
    </message>
    <message>
        <source>Queue: {running} running, {paused} paused, {waiting} waiting</source>
        <translation>キュー: 実行中 {running}、一時停止中 {paused}、待機中 {waiting}</translation>
    </message>
    <message>
        <source>The {color} bar in the tray icon</source>
        <translation>トレイアイコンの{color}のバー</translation>
    </message>
    <message>
        <source>busy: {reasons}</source>
        <translation>使用中: {reasons}</translation>
    </message>
    <message>
        <source>Stop process</source>
        <translation>プロセスを停止</translation>
    </message>
    <message>
        <source>It is asked to end, as `kill` would; whatever it has not saved is lost.</source>
        <translation>`kill` と同じように終了を求めます。保存していない内容は失われます。</translation>
    </message>
    <message>
        <source>this is gputray itself</source>
        <translation>gputray 自身です</translation>
    </message>
    <message>
        <source>another user's process</source>
        <translation>他のユーザーのプロセスです</translation>
    </message>
    <message>
        <source>{name} cannot be stopped: {why}</source>
        <translation>{name} は停止できません: {why}</translation>
    </message>
    <message>
        <source>not running on this machine</source>
        <translation>このマシンでは動いていません</translation>
    </message>
    <message>
        <source>Stop {name} (PID {pid})?</source>
        <translation>{name}(PID {pid})を停止しますか?</translation>
    </message>
    <message>
        <source>the PID now belongs to {name}</source>
        <translation>この PID は今は {name} のものです</translation>
    </message>
    <message>
        <source>{name} could not be stopped: {error}</source>
        <translation>{name} を停止できませんでした: {error}</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>タスク</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状態</translation>
    </message>
    <message>
        <source>Reason</source>
        <translation>理由</translation>
    </message>
    <message>
        <source>Elapsed</source>
        <translation>経過</translation>
    </message>
    <message>
        <source>exit status {code}</source>
        <translation>終了コード {code}</translation>
    </message>
    <message>
        <source>log: {path}</source>
        <translation>ログ: {path}</translation>
    </message>
    <message>
        <source>System (auto)</source>
        <translation>システム (自動)</translation>
    </message>
    <message>
        <source>Poll interval</source>
        <translation>取得間隔</translation>
    </message>
    <message>
        <source>Busy above (external use)</source>
        <translation>使用中とみなす値 (外部の使用)</translation>
    </message>
    <message>
        <source>Temperature limit, discrete GPU</source>
        <translation>温度上限 (ディスクリート GPU)</translation>
    </message>
    <message>
        <source>Temperature limit, integrated GPU</source>
        <translation>温度上限 (内蔵 GPU)</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>言語</translation>
    </message>
    <message>
        <source>gputray settings</source>
        <translation>gputray の設定</translation>
    </message>
    <message>
        <source>Start gputray when I log in</source>
        <translation>ログイン時に gputray を起動</translation>
    </message>
    <message>
        <source>Python environments</source>
        <translation>Python 環境</translation>
    </message>
    <message>
        <source>Add…</source>
        <translation>追加…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>削除</translation>
    </message>
    <message>
        <source>Recipes (what a dropped file becomes)</source>
        <translation>レシピ (ドロップしたファイルから作るジョブ)</translation>
    </message>
    <message>
        <source>Edit my recipes file</source>
        <translation>自分のレシピファイルを編集</translation>
    </message>
    <message>
        <source>Notifications</source>
        <translation>通知</translation>
    </message>
    <message>
        <source>Choose a Python interpreter</source>
        <translation>Python インタープリターを選択</translation>
    </message>
    <message>
        <source>Saved in {path}</source>
        <translation>保存先: {path}</translation>
    </message>
    <message>
        <source>Recipes could not be read: {error}</source>
        <translation>レシピを読めませんでした: {error}</translation>
    </message>
    <message>
        <source>Environments could not be read: {error}</source>
        <translation>環境を読めませんでした: {error}</translation>
    </message>
    <message>
        <source>No GPU was found on this machine, so gputray shows two simulated GPUs (DEMO).</source>
        <translation>このマシンには GPU が見つからないため、gputray はシミュレーションの GPU を 2 つ表示しています (デモ)。</translation>
    </message>
    <message>
        <source>No system tray was found on this desktop (for example stock GNOME without the AppIndicator extension), so gputray runs as this window. Closing it quits gputray.</source>
        <translation>このデスクトップにはシステムトレイがありません (例: AppIndicator 拡張のない標準の GNOME)。そのため gputray はこのウィンドウで動作します。閉じると gputray は終了します。</translation>
    </message>
    <message>
        <source>The GPU backends failed to start ({error}).</source>
        <translation>GPU バックエンドを開始できませんでした ({error})。</translation>
    </message>
    <message>
        <source>gputray could not start its queue: {error}</source>
        <translation>gputray はキューを開始できませんでした: {error}</translation>
    </message>
    <message>
        <source>Your config file has a problem, so the defaults are used: {error}</source>
        <translation>設定ファイルに問題があるため、既定値を使います: {error}</translation>
    </message>
    <message>
        <source>gputray is still starting; try again in a moment.</source>
        <translation>gputray はまだ起動中です。少し待ってからもう一度お試しください。</translation>
    </message>
    <message>
        <source>The log {path} does not exist (yet).</source>
        <translation>ログ {path} は (まだ) ありません。</translation>
    </message>
    <message>
        <source>starting…</source>
        <translation>起動中…</translation>
    </message>
    <message>
        <source>no GPU found</source>
        <translation>GPU なし</translation>
    </message>
    <message>
        <source>{running} running, {waiting} waiting</source>
        <translation>実行中 {running}、待機中 {waiting}</translation>
    </message>
    <message>
        <source>{running} running, {paused} paused, {waiting} waiting</source>
        <translation>実行中 {running}、一時停止中 {paused}、待機中 {waiting}</translation>
    </message>
    <message>
        <source>hot</source>
        <translation>高温</translation>
    </message>
    <message>
        <source>Devices</source>
        <translation>デバイス</translation>
    </message>
    <message>
        <source>PCIe link</source>
        <translation>PCIe リンク</translation>
    </message>
    <message>
        <source>Fan</source>
        <translation>ファン</translation>
    </message>
    <message>
        <source>Power limit</source>
        <translation>電力上限</translation>
    </message>
    <message>
        <source>Memory clock</source>
        <translation>メモリクロック</translation>
    </message>
    <message>
        <source>Encoder</source>
        <translation>エンコーダー</translation>
    </message>
    <message>
        <source>Decoder</source>
        <translation>デコーダー</translation>
    </message>
    <message>
        <source>of</source>
        <translation>／最大</translation>
    </message>
    <message>
        <source>(idle)</source>
        <translation>（アイドル）</translation>
    </message>
    <message>
        <source>(idle: links slow down to save power)</source>
        <translation>（アイドル：省電力のためリンク速度が下がります）</translation>
    </message>
    <message>
        <source>fan</source>
        <translation>ファン</translation>
    </message>
    <message>
        <source>limit</source>
        <translation>上限</translation>
    </message>
    <message>
        <source>mem</source>
        <translation>メモリ</translation>
    </message>
    <message>
        <source>enc</source>
        <translation>エンコード</translation>
    </message>
    <message>
        <source>dec</source>
        <translation>デコード</translation>
    </message>
    <message>
        <source>{who} holds {size} and the GPU is at {util} % (busy above {threshold})</source>
        <translation>{who} が {size} を使用中で、GPU は {util} %（{threshold} 超で使用中）</translation>
    </message>
    <message>
        <source>{who} hold {size} and the GPU is at {util} % (busy above {threshold})</source>
        <translation>{who} が {size} を使用中で、GPU は {util} %（{threshold} 超で使用中）</translation>
    </message>
    <message>
        <source>{who} holds {size} and the GPU was above {threshold} {secs} s ago</source>
        <translation>{who} が {size} を使用中で、GPU は {secs} 秒前に {threshold} を超えていました</translation>
    </message>
    <message>
        <source>{who} hold {size} and the GPU was above {threshold} {secs} s ago</source>
        <translation>{who} が {size} を使用中で、GPU は {secs} 秒前に {threshold} を超えていました</translation>
    </message>
    <message>
        <source>{name} and {n} others</source>
        <translation>{name} ほか {n} 件</translation>
    </message>
    <message>
        <source>{name} and {n} other</source>
        <translation>{name} ほか {n} 件</translation>
    </message>
    <message>
        <source>above {threshold} for {secs} s</source>
        <translation>{secs} 秒間 {threshold} 超</translation>
    </message>
    <message>
        <source>now {util} %, free again in {secs} s if it stays low</source>
        <translation>現在 {util} %、このまま低ければ {secs} 秒後に空きます</translation>
    </message>
    <message>
        <source>now {util} %</source>
        <translation>現在 {util} %</translation>
    </message>
    <message>
        <source>now —</source>
        <translation>現在 —</translation>
    </message>
    <message>
        <source>free again in {secs} s if it stays low</source>
        <translation>このまま低ければ {secs} 秒後に空きます</translation>
    </message>
    <message>
        <source>{who} uses {size}</source>
        <translation>{who} が {size} を使用中</translation>
    </message>
    <message>
        <source>{who} use {size}</source>
        <translation>{who} が {size} を使用中</translation>
    </message>
    <message>
        <source>checking env {env} on {where} (demo: in place of {name})…</source>
        <translation>{where} で環境 {env} を確認中（デモ：{name} の代わり）…</translation>
    </message>
    <message>
        <source>checking env {env} on {where}…</source>
        <translation>{where} で環境 {env} を確認中…</translation>
    </message>
    <message>
        <source>no configured Python env works on {where} (demo: in place of {name}): {parts}</source>
        <translation>{where} で動く Python 環境がありません（デモ：{name} の代わり）：{parts}</translation>
    </message>
    <message>
        <source>no configured Python env works on {where}: {parts}</source>
        <translation>{where} で動く Python 環境がありません：{parts}</translation>
    </message>
    <message>
        <source>no configured Python env works on {where} (demo: in place of {name})</source>
        <translation>{where} で動く Python 環境がありません（デモ：{name} の代わり）</translation>
    </message>
    <message>
        <source>no configured Python env works on {where}</source>
        <translation>{where} で動く Python 環境がありません</translation>
    </message>
    <message>
        <source>no Python env is known to work on {where}</source>
        <translation>{where} で動くと分かっている Python 環境がありません</translation>
    </message>
    <message>
        <source>demo: torch jobs run on the CPU in an env with torch; add one: {hint}</source>
        <translation>デモ：torch ジョブは torch のある環境で CPU 上で動きます。追加：{hint}</translation>
    </message>
    <message>
        <source>no Python env is configured for torch jobs; add one: {hint}</source>
        <translation>torch ジョブ用の Python 環境が設定されていません。追加：{hint}</translation>
    </message>
    <message>
        <source>demo: ran on the CPU in place of {name}</source>
        <translation>デモ：{name} の代わりに CPU で実行しました</translation>
    </message>
    <message>
        <source>demo: running on the CPU in place of {name}</source>
        <translation>デモ：{name} の代わりに CPU で実行中</translation>
    </message>
    <message>
        <source>the CPU (demo: in place of {name})</source>
        <translation>CPU（デモ：{name} の代わり）</translation>
    </message>
    <message>
        <source>{n} job(s) are running. Keep them running after gputray quits?</source>
        <translation>{n} 件のジョブが実行中です。gputray を終了した後も実行を続けますか?</translation>
    </message>
    <message>
        <source>Kept jobs run to their end; when gputray starts again it records how they ended.</source>
        <translation>続けたジョブは最後まで実行されます。次に gputray を起動したときに、その結果が記録されます。</translation>
    </message>
    <message>
        <source>Keep running</source>
        <translation>実行を続ける</translation>
    </message>
    <message>
        <source>Stop them</source>
        <translation>停止する</translation>
    </message>
    <message>
        <source>Set priority…</source>
        <translation>優先度を設定…</translation>
    </message>
    <message>
        <source>Set priority</source>
        <translation>優先度を設定</translation>
    </message>
    <message>
        <source>Priority of {name} (higher starts first):</source>
        <translation>{name} の優先度（大きいほど先に開始）：</translation>
    </message>
    <message>
        <source>The dashboard</source>
        <translation>ダッシュボード</translation>
    </message>
    <message>
        <source>The settings window</source>
        <translation>設定ウィンドウ</translation>
    </message>
    <message>
        <source>{window} needs {module}, which this Python does not have. Install it with

{python} -m pip install {package}

(or reinstall gputray, which depends on it), then open it again.</source>
        <translation>{window}には {module} が必要ですが、この Python にはありません。次のコマンドでインストールしてください:

{python} -m pip install {package}

(gputray を入れ直しても一緒に入ります)。その後もう一度開いてください。</translation>
    </message>
    <message>
        <source>{window} could not be opened: {error}

If gputray was updated or reinstalled while it ran, quit and start it again. The full error is in {log}.</source>
        <translation>{window}を開けませんでした: {error}

gputray の実行中に更新または再インストールした場合は、終了してから起動し直してください。エラーの詳細は {log} にあります。</translation>
    </message>
    <message>
        <source>{source}: {key} = {value} is not {allowed}; using {default}</source>
        <translation>{source}: {key} = {value} は {allowed}ではありません。{default} を使います</translation>
    </message>
    <message>
        <source>{source}: {key} = {value} is not {allowed}; left unset</source>
        <translation>{source}: {key} = {value} は {allowed}ではありません。未設定のままにします</translation>
    </message>
    <message>
        <source>{source}: {key} = {value} is not {allowed}; ignored</source>
        <translation>{source}: {key} = {value} は {allowed}ではありません。無視します</translation>
    </message>
    <message>
        <source>{source}: unknown key {key} (did you mean {suggestion}?); ignored</source>
        <translation>{source}: 不明なキー {key} ({suggestion} の間違いでは?)。無視します</translation>
    </message>
    <message>
        <source>{source}: unknown key {key} (known: {known}); ignored</source>
        <translation>{source}: 不明なキー {key} (使えるキー: {known})。無視します</translation>
    </message>
    <message>
        <source>{source}: [{key}] must be a table, not {value}; using the defaults</source>
        <translation>{source}: [{key}] はテーブルでなければなりません ({value} になっています)。既定値を使います</translation>
    </message>
    <message>
        <source>{source}: two environments are named {name}; names must be unique</source>
        <translation>{source}: {name} という名前の環境が 2 つあります。名前は重複できません</translation>
    </message>
    <message>
        <source>{source}: [devices] must be a table of [devices.&lt;name&gt;] tables, not {value}</source>
        <translation>{source}: [devices] は [devices.&lt;name&gt;] テーブルの集まりでなければなりません ({value} になっています)</translation>
    </message>
    <message>
        <source>{source}: devices.{name} must be a table like `slots = 2`, not {value}</source>
        <translation>{source}: devices.{name} は `slots = 2` のようなテーブルでなければなりません ({value} になっています)</translation>
    </message>
    <message>
        <source>{source}: env must be written as [[env]] tables</source>
        <translation>{source}: env は [[env]] テーブルとして書いてください</translation>
    </message>
    <message>
        <source>a number in {low} … {high}</source>
        <translation>{low} … {high} の数値</translation>
    </message>
    <message>
        <source>a whole number in {low} … {high}</source>
        <translation>{low} … {high} の整数</translation>
    </message>
    <message>
        <source>a number</source>
        <translation>数値</translation>
    </message>
    <message>
        <source>a whole number</source>
        <translation>整数</translation>
    </message>
    <message>
        <source>one of {values}</source>
        <translation>{values} のいずれか</translation>
    </message>
    <message>
        <source>text</source>
        <translation>文字列</translation>
    </message>
    <message>
        <source>true or false</source>
        <translation>true か false</translation>
    </message>
    <message>
        <source>a list of text</source>
        <translation>文字列のリスト</translation>
    </message>
    <message>
        <source>a table of true/false values</source>
        <translation>true/false の値のテーブル</translation>
    </message>
    <message>
        <source>Cancel the selected tasks; a running one is stopped</source>
        <translation>選択したタスクをキャンセルします (実行中のものは停止します)</translation>
    </message>
    <message>
        <source>Select a queued, waiting or running task to cancel it</source>
        <translation>キャンセルするには、キュー内・待機中・実行中のタスクを選択してください</translation>
    </message>
    <message>
        <source>Queue the selected tasks again</source>
        <translation>選択したタスクをもう一度キューに入れます</translation>
    </message>
    <message>
        <source>Select a task that has ended to queue it again</source>
        <translation>もう一度キューに入れるには、終了したタスクを選択してください</translation>
    </message>
    <message>
        <source>Select one queued or waiting task to move it</source>
        <translation>移動するには、キュー内または待機中のタスクを 1 つ選択してください</translation>
    </message>
    <message>
        <source>Open the selected task's log</source>
        <translation>選択したタスクのログを開きます</translation>
    </message>
    <message>
        <source>Select one task that has started to open its log</source>
        <translation>ログを開くには、開始済みのタスクを 1 つ選択してください</translation>
    </message>
    <message>
        <source>could not start for now ({error}); trying again in {secs} s, {n} tries so far</source>
        <translation>今は開始できません（{error}）。{secs} 秒後にもう一度試します（これまで {n} 回）</translation>
    </message>
    <message>
        <source>could not start for now ({error}); trying again in {secs} s</source>
        <translation>今は開始できません（{error}）。{secs} 秒後にもう一度試します</translation>
    </message>
    <message>
        <source>interrupted: its supervisor process was killed as the job started; {n} processes of the job stopped</source>
        <translation>中断: ジョブの開始時に監視プロセスが強制終了されました。ジョブのプロセス {n} 個を停止しました</translation>
    </message>
    <message>
        <source>interrupted: its supervisor process was killed as the job started; 1 process of the job stopped</source>
        <translation>中断: ジョブの開始時に監視プロセスが強制終了されました。ジョブのプロセス 1 個を停止しました</translation>
    </message>
    <message>
        <source>interrupted: its supervisor process was killed as the job started</source>
        <translation>中断: ジョブの開始時に監視プロセスが強制終了されました</translation>
    </message>
    <message>
        <source>interrupted: its supervisor process was killed, so how it ended is unknown ({n} processes of the job stopped)</source>
        <translation>中断: 監視プロセスが強制終了されたため、終了状態は不明です（ジョブのプロセス {n} 個を停止しました）</translation>
    </message>
    <message>
        <source>interrupted: its supervisor process was killed, so how it ended is unknown (1 process of the job stopped)</source>
        <translation>中断: 監視プロセスが強制終了されたため、終了状態は不明です（ジョブのプロセス 1 個を停止しました）</translation>
    </message>
    <message>
        <source>interrupted: its supervisor process was killed, so how it ended is unknown</source>
        <translation>中断: 監視プロセスが強制終了されたため、終了状態は不明です</translation>
    </message>
    <message>
        <source>{n} processes were still running after the job ended: stopped</source>
        <translation>ジョブの終了後も {n} 個のプロセスが動いていました: 停止しました</translation>
    </message>
    <message>
        <source>1 process was still running after the job ended: stopped</source>
        <translation>ジョブの終了後も 1 個のプロセスが動いていました: 停止しました</translation>
    </message>
    <message>
        <source>GPU energy: {energy}</source>
        <translation>GPU 消費電力量: {energy}</translation>
    </message>
    <message>
        <source>GPU energy: {energy} ({watts} W on average)</source>
        <translation>GPU 消費電力量: {energy} (平均 {watts} W)</translation>
    </message>
    <message>
        <source>shared: the GPU ran other work too, so this is the whole device's energy</source>
        <translation>共有: GPU で他の処理も動いていたため、これはデバイス全体の電力量です</translation>
    </message>
    <message>
        <source>{seconds} s of it counted from power: the GPU's energy counter glitched</source>
        <translation>うち {seconds} 秒分は消費電力から計算: GPU の電力量カウンタが異常な値を示したため</translation>
    </message>
    <message>
        <source>About gputray</source>
        <translation>gputray について</translation>
    </message>
    <message>
        <source>gputray {version}</source>
        <translation>gputray {version}</translation>
    </message>
    <message>
        <source>Qt {qt} (PySide6 {pyside})</source>
        <translation>Qt {qt} (PySide6 {pyside})</translation>
    </message>
    <message>
        <source>Python {python}</source>
        <translation>Python {python}</translation>
    </message>
    <message>
        <source>frozen build</source>
        <translation>単体実行ビルド</translation>
    </message>
    <message>
        <source>General</source>
        <translation>一般</translation>
    </message>
    <message>
        <source>Added and removed environments are written to the config file on Save.</source>
        <translation>追加・削除した環境は「保存」を押したときに設定ファイルへ書き込まれます。</translation>
    </message>
    <message>
        <source>Your recipes file</source>
        <translation>自分のレシピファイル</translation>
    </message>
    <message>
        <source>No program here opens this file. Open it in your editor from this path:</source>
        <translation>このファイルを開くプログラムがありません。次のパスからエディターで開いてください:</translation>
    </message>
    <message>
        <source>Copy path</source>
        <translation>パスをコピー</translation>
    </message>
    <message>
        <source>Copied</source>
        <translation>コピーしました</translation>
    </message>
    <message>
        <source>Open Settings…</source>
        <translation>設定を開く…</translation>
    </message>
    <message>
        <source>No GPU was found on this machine, so gputray stays in demo mode.</source>
        <translation>このマシンに GPU が見つからないため、gputray はデモモードのままです。</translation>
    </message>
    <message numerus="yes">
        <source>%n file(s) will become %n job(s).</source>
        <translation>
            <numerusform>%n 個のファイルから %n 個のジョブを作ります。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{left} of the %n dropped item(s) will not be queued (see below).</source>
        <translation>
            <numerusform>ドロップした %n 件のうち {left} 件はキューに追加されません(下記参照)。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n job(s) are running. Keep them running after gputray quits?</source>
        <translation>
            <numerusform>%n 件のジョブが実行中です。gputray を終了した後も実行を続けますか?</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Stop %n running job(s)?</source>
        <translation>
            <numerusform>実行中の %n 件のジョブを止めますか?</numerusform>
        </translation>
    </message>
    <message>
        <source>Stop the running job {name} (#{id})?</source>
        <translation>実行中のジョブ {name} (#{id}) を止めますか?</translation>
    </message>
    <message>
        <source>It is stopped at once with the processes it started, and its log ends with the cancel.</source>
        <translation>ジョブが起動したプロセスごとすぐに止め、ログの最後にキャンセルしたことを書きます。</translation>
    </message>
    <message>
        <source>Stop it</source>
        <translation>止める</translation>
    </message>
    <message>
        <source>Keep it running</source>
        <translation>実行を続ける</translation>
    </message>
    <message>
        <source>Don't ask again</source>
        <translation>次回から確認しない</translation>
    </message>
    <message>
        <source>Pause job</source>
        <translation>ジョブを一時停止</translation>
    </message>
    <message>
        <source>Resume job</source>
        <translation>ジョブを再開</translation>
    </message>
    <message>
        <source>Freeze every process of the job; its GPU memory is freed where cuda-checkpoint can</source>
        <translation>ジョブのすべてのプロセスを凍結します。cuda-checkpoint が使える場合は GPU メモリも解放されます</translation>
    </message>
    <message>
        <source>paused by you at {time}</source>
        <translation>{time} にあなたが一時停止</translation>
    </message>
    <message>
        <source>paused at {time}</source>
        <translation>{time} に一時停止</translation>
    </message>
    <message>
        <source>resumed {time}</source>
        <translation>{time} に再開</translation>
    </message>
    <message>
        <source>its GPU memory was moved to host memory (cuda-checkpoint)</source>
        <translation>GPU メモリはホストメモリに退避済み (cuda-checkpoint)</translation>
    </message>
    <message>
        <source>its GPU memory stays held (cuda-checkpoint: {error})</source>
        <translation>GPU メモリは保持されたまま (cuda-checkpoint: {error})</translation>
    </message>
    <message>
        <source>{why} (cuda-checkpoint could not restore it: {error})</source>
        <translation>{why} (cuda-checkpoint で復元できません: {error})</translation>
    </message>
    <message>
        <source>paused for #{id} (priority {priority}) at {time}</source>
        <translation>{time} に #{id} (優先度 {priority}) のため一時停止</translation>
    </message>
    <message>
        <source>can start now on {device}</source>
        <translation>{device} で今すぐ開始できます</translation>
    </message>
    <message>
        <source>{name} can start now on {device}: waiting for {waited}, it takes about {run} there</source>
        <translation>{name} は {device} で今すぐ開始できます: {waited} 待機中、{device} では約 {run} で終わります</translation>
    </message>
    <message numerus="yes">
        <source>(%n more: right-click their rows)</source>
        <translation>
            <numerusform>(ほかに %n 件: 各行を右クリック)</numerusform>
        </translation>
    </message>
    <message>
        <source>out of memory on {name} at {size}</source>
        <translation>{name} でメモリ不足 ({size} 使用時)</translation>
    </message>
    <message>
        <source>out of memory on {name}</source>
        <translation>{name} でメモリ不足</translation>
    </message>
    <message>
        <source>running on {name} ({size} VRAM free)</source>
        <translation>{name} で実行 (VRAM 空き {size})</translation>
    </message>
    <message>
        <source>running on {name} ({size} shared free)</source>
        <translation>{name} で実行 (共有メモリ空き {size})</translation>
    </message>
    <message>
        <source>running on {name} ({size} RAM free)</source>
        <translation>{name} で実行 (RAM 空き {size})</translation>
    </message>
    <message>
        <source>no device it may use has that free ({free})</source>
        <translation>使えるデバイスにその空きがありません ({free})</translation>
    </message>
    <message>
        <source>no device it may use has that free</source>
        <translation>使えるデバイスにその空きがありません</translation>
    </message>
    <message>
        <source>Recipes</source>
        <translation>レシピ</translation>
    </message>
    <message numerus="yes">
        <source>Your config file has %n problem(s) (`gputray config` lists them): {first}</source>
        <translation>
            <numerusform>設定ファイルに問題が %n 件あります（`gputray config` で一覧できます）: {first}</numerusform>
        </translation>
    </message>
    <message>
        <source>{bar} {percent}%</source>
        <translation>{bar} {percent}%</translation>
    </message>
    <message>
        <source>{bar} {percent}%, {left} left</source>
        <translation>{bar} {percent}%、残り {left}</translation>
    </message>
    <message>
        <source>{index} of {count}</source>
        <translation>{count} 件中 {index} 件目</translation>
    </message>
    <message>
        <source>Previous question</source>
        <translation>前の質問</translation>
    </message>
    <message>
        <source>Next question</source>
        <translation>次の質問</translation>
    </message>
    <message>
        <source>Waiting tasks that an idle program's memory would let start: the arrows go through them</source>
        <translation>アイドル中のプログラムのメモリが空けば開始できる待機中のタスク: 矢印で順に表示します</translation>
    </message>
</context>
</TS>
