<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US" sourcelanguage="en">
<!-- English plural forms only (gui/i18n.py: trn); every other string is shown as its source. -->
<context>
    <name>gputray</name>
    <message numerus="yes">
        <source>%n file(s) will become %n job(s).</source>
        <translation>
            <numerusform>%n file will become %n job.</numerusform>
            <numerusform>%n files will become %n jobs.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{left} of the %n dropped item(s) will not be queued (see below).</source>
        <translation>
            <numerusform>{left} of the %n dropped item will not be queued (see below).</numerusform>
            <numerusform>{left} of the %n dropped items will not be queued (see below).</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n job(s) are running. Keep them running after gputray quits?</source>
        <translation>
            <numerusform>%n job is running. Keep it running after gputray quits?</numerusform>
            <numerusform>%n jobs are running. Keep them running after gputray quits?</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Stop %n running job(s)?</source>
        <translation>
            <numerusform>Stop %n running job?</numerusform>
            <numerusform>Stop %n running jobs?</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>(%n more: right-click their rows)</source>
        <translation>
            <numerusform>(%n more: right-click its row)</numerusform>
            <numerusform>(%n more: right-click their rows)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Your config file has %n problem(s) (`gputray config` lists them): {first}</source>
        <translation>
            <numerusform>Your config file has %n problem (`gputray config` lists it): {first}</numerusform>
            <numerusform>Your config file has %n problems (`gputray config` lists them): {first}</numerusform>
        </translation>
    </message>
</context>
</TS>
