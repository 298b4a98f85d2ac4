package proc

import (
	"errors"
	"testing"
)

func TestCleanLabel(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{in: "trainer.0/foo", want: "trainer_0_foo"},
		{in: "  GPU Worker  ", want: "gpu_worker"},
		{in: "make", want: "make"},
		{in: "a--b__c", want: "a--b__c"},
		{in: "a...b", want: "a_b"},
		{in: "__x__", want: "x"},
		{in: "-x-", want: "-x-"},
		{in: "Übung 1", want: "bung_1"},
		{in: "日本 job", want: "job"},
		{in: "./bin/train.v2", want: "bin_train_v2"},
		{in: "", wantErr: ErrEmptyLabel},
		{in: "   ", wantErr: ErrEmptyLabel},
		{in: "./..", wantErr: ErrEmptyLabel},
		{in: "日本", wantErr: ErrEmptyLabel},
	}
	for _, tt := range tests {
		got, err := CleanLabel(tt.in)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("CleanLabel(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("CleanLabel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLabelFromCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{in: "/usr/bin/python3", want: "python3"},
		{in: "./bin/train.v2", want: "train_v2"},
		{in: "make", want: "make"},
		{in: "/opt/My Tool/Run.SH", want: "run_sh"},
		{in: "dir/", want: "dir"},
		{in: "/", wantErr: ErrEmptyLabel},
		{in: "", wantErr: ErrEmptyLabel},
		{in: "./...", wantErr: ErrEmptyLabel},
	}
	for _, tt := range tests {
		got, err := LabelFromCommand(tt.in)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("LabelFromCommand(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("LabelFromCommand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
