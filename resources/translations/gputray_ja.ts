<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="ja_JP" sourcelanguage="en">
<context>
    <name>gputray</name>
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
        <source>minutes ago</source>
        <translation>分前</translation>
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
        <source>Cached results; run the doctor to probe again.</source>
        <translation>キャッシュされた結果です。再調査するには診断を実行してください。</translation>
    </message>
    <message>
        <source>Run doctor</source>
        <translation>診断を実行</translation>
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
        <source>Running the doctor…</source>
        <translation>診断を実行中…</translation>
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
        <source>Reason / fix</source>
        <translation>理由 / 対処</translation>
    </message>
    <message>
        <source>Figures</source>
        <translation>測定値</translation>
    </message>
    <message>
        <source>No doctor results yet: add a Python environment in Settings.</source>
        <translation>診断結果はまだありません。設定で Python 環境を追加してください。</translation>
    </message>
    <message>
        <source>dashboard</source>
        <translation>ダッシュボード</translation>
    </message>
    <message>
        <source>DEMO</source>
        <translation>デモ</translation>
    </message>
    <message>
        <source>Cannot read {path}: {error}</source>
        <translation>{path} を読めません: {error}</translation>
    </message>
    <message>
        <source>Doctor finished at {time}</source>
        <translation>診断完了 {time}</translation>
    </message>
    <message>
        <source>Doctor results could not be read: {error}</source>
        <translation>診断結果を読めませんでした: {error}</translation>
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
        <source>{n} file(s) will become {n} job(s).</source>
        <translation>{n} 個のファイルから {n} 個のジョブを作ります。</translation>
    </message>
    <message>
        <source>Remember for {type} files</source>
        <translation>{type} ファイルではこの設定を記憶</translation>
    </message>
    <message>
        <source>Show panel</source>
        <translation>パネルを表示</translation>
    </message>
    <message>
        <source>Pause queue</source>
        <translation>キューを一時停止</translation>
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
        <source>{name} is back</source>
        <translation>{name} が復帰しました</translation>
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
        <source>lost</source>
        <translation>消失</translation>
    </message>
    <message>
        <source>unavailable</source>
        <translation>利用不可</translation>
    </message>
    <message>
        <source>VRAM {vram}  ·  shared {shared}</source>
        <translation>VRAM {vram}  ·  共有 {shared}</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>一時停止</translation>
    </message>
    <message>
        <source>Pause or resume the queue on this device</source>
        <translation>このデバイスのキューを一時停止/再開</translation>
    </message>
    <message>
        <source>Pin the panel first when you drag from another window: it hides when it loses focus.</source>
        <translation>別のウィンドウからドラッグするときは先にパネルを固定してください。フォーカスを失うと隠れます。</translation>
    </message>
    <message>
        <source>Dashboard</source>
        <translation>ダッシュボード</translation>
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
        <source>Looking for GPUs…</source>
        <translation>GPU を探しています…</translation>
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
        <source>Resume</source>
        <translation>再開</translation>
    </message>
    <message>
        <source>No GPU found.</source>
        <translation>GPU が見つかりません。</translation>
    </message>
    <message>
        <source>+{n} more</source>
        <translation>ほか {n} 件</translation>
    </message>
    <message>
        <source>simulated</source>
        <translation>シミュレーション</translation>
    </message>
    <message>
        <source>Queue: {running} running, {waiting} waiting</source>
        <translation>キュー: 実行中 {running}、待機中 {waiting}</translation>
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
        <source>busy: {reasons}</source>
        <translation>使用中: {reasons}</translation>
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
        <source>cancelled</source>
        <translation>キャンセル済み</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>中断</translation>
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
        <source>System (auto)</source>
        <translation>システム (自動)</translation>
    </message>
    <message>
        <source>gputray settings</source>
        <translation>gputray の設定</translation>
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
        <source>gputray is still starting; try again in a moment.</source>
        <translation>gputray はまだ起動中です。少し待ってからもう一度お試しください。</translation>
    </message>
    <message>
        <source>gputray could not start its queue: {error}</source>
        <translation>gputray はキューを開始できませんでした: {error}</translation>
    </message>
    <message>
        <source>The log {path} does not exist (yet).</source>
        <translation>ログ {path} は (まだ) ありません。</translation>
    </message>
    <message>
        <source>The GPU backends failed to start ({error}).</source>
        <translation>GPU バックエンドを開始できませんでした ({error})。</translation>
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
        <source>asleep</source>
        <translation>スリープ中</translation>
    </message>
</context>
</TS>
